import { env } from "~/utils/env.server";
import { DockerRuntime } from "./docker.server";
import type { Runtime } from "./runtime";

let registry: Map<string, Runtime> | undefined;

export const DEFAULT_RUNTIME = "docker";

export function runtimes(): Map<string, Runtime> {
  registry ??= new Map<string, Runtime>([[DEFAULT_RUNTIME, new DockerRuntime(env().HOLM_DOCKER_SOCKET)]]);
  return registry;
}

export function runtime(name: string): Runtime | undefined {
  return runtimes().get(name);
}
