import { env } from "~/utils/env.server";
import { DockerRuntime } from "./docker.server";
import type { Runtime } from "./runtime";

// The runtimes this server launches boxes on, by name. Docker by default; setRuntimes() is the
// seam that lets the box model's slots, serial chain and reaper be tested without an engine.

let registry: Map<string, Runtime> | undefined;

export const DEFAULT_RUNTIME = "docker";

export function runtimes(): Map<string, Runtime> {
  registry ??= new Map<string, Runtime>([[DEFAULT_RUNTIME, new DockerRuntime(env().HOLM_DOCKER_SOCKET)]]);
  return registry;
}

export function runtime(name: string): Runtime | undefined {
  return runtimes().get(name);
}

/** Replaces the runtimes (tests); `undefined` goes back to the default on next use. */
export function setRuntimes(next: Map<string, Runtime> | undefined): void {
  registry = next;
}
