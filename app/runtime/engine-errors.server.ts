import { isApiError } from "~/utils/api-error.server";

// Whether a launch that failed may succeed if asked again (seed 000's `retryable`), from what
// failed rather than from words in its message: an engine that did not answer (refused or lost
// the connection, its socket missing, no answer in time) may answer later; an engine that
// answered and refused the box (a bad parameter, runc refusing the container) will refuse it again.
// A message can name "docker" (a cgroup path) or "runtime" either way.

// The connection to the engine itself failed (no HTTP answer came back).
const UNREACHED = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN", "ENOENT", "ECONNABORTED"]);

/** True when `err` says the engine could not be reached or did not answer in time, not that it refused. */
export function engineAway(err: unknown, depth = 0): boolean {
  if (!(err instanceof Error) || depth > 3) return false;
  // Our own refusals say for themselves (EngineTimeout, a cluster's start slot without Redis: yes).
  if (isApiError(err)) return err.retryable;
  const e = err as Error & { code?: unknown; statusCode?: unknown; cause?: unknown };
  // An answer from the engine: only "not available now" (503) is worth asking again.
  if (typeof e.statusCode === "number") return e.statusCode === 503;
  // ENOENT only for the engine's socket (a file the image build misses is no outage).
  if (typeof e.code === "string" && UNREACHED.has(e.code) && (e.code !== "ENOENT" || (e as { syscall?: unknown }).syscall === "connect")) return true;
  return engineAway(e.cause, depth + 1);
}
