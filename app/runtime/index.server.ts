import { env } from "~/utils/env.server";
import { DockerRuntime } from "./docker.server";
import type { Runtime } from "./runtime";

// The runtimes this server launches boxes on, by name. Docker by default; setRuntimes() is the
// seam that lets the box model's slots, serial chain and reaper be tested without an engine.
// Runtimes added through /v1 (stored, ADR 0017/0019) are opened by the runtime model, which alone
// reads their sealed secrets, and put here with useStoredRuntime().

let registry: Map<string, Runtime> | undefined;
const stored = new Map<string, Runtime>();

export const DEFAULT_RUNTIME = "docker";

export function runtimes(): Map<string, Runtime> {
  registry ??= new Map<string, Runtime>([[DEFAULT_RUNTIME, new DockerRuntime(env().HOLM_DOCKER_SOCKET)]]);
  return registry;
}

export function runtime(name: string): Runtime | undefined {
  return runtimes().get(name) ?? stored.get(name);
}

/** The stored runtimes opened on this server, by name (adoption scans them as it does the built-in one). */
export function storedRuntimes(): [string, Runtime][] {
  return [...stored];
}

/** The built-in engine as Docker (it builds the images other engines receive); undefined in tests without one. */
export function localDocker(): DockerRuntime | undefined {
  const rt = runtimes().get(DEFAULT_RUNTIME);
  return rt instanceof DockerRuntime ? rt : undefined;
}

/**
 * Puts an opened stored runtime under its name, or drops it (`undefined`): a runtime changed or
 * removed loses its client, its secrets and its listeners here.
 */
export function useStoredRuntime(name: string, rt: Runtime | undefined): void {
  const old = stored.get(name);
  if (old && old !== rt) (old as { dispose?: () => Promise<void> }).dispose?.().catch(() => undefined);
  if (rt) stored.set(name, rt);
  else stored.delete(name);
}

/** Replaces the runtimes (tests); `undefined` goes back to the default on next use. */
export function setRuntimes(next: Map<string, Runtime> | undefined): void {
  registry = next;
}
