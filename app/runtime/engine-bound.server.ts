import { Transform } from "node:stream";
import type Docker from "dockerode";
import { ApiError } from "~/utils/api-error.server";
import { env } from "~/utils/env.server";

// A remote engine that stops answering (a frozen dockerd, a host cut off, a listener that never
// writes) must not hold a caller forever (review I; ADR 0019). docker-modem's own `timeout` is
// an idle timer on the socket: right for a JSON answer, wrong for a stream that may sit idle
// legitimately (an exec's tunnel, `events`, a build's silent step). So the bound is put on
// every request dockerode makes, around docker-modem's `dial`: from the call to its answer
// (the headers of a stream, the upgrade of a hijacked exec, the whole body of a JSON answer).
// An upload (an image load, a build context) is timed while it is sent by the time between its
// chunks, and after its last one by UPLOAD_DONE_MS: the engine unpacks before it says a word.

/** How long an engine may work on an upload it has received before answering (an image load unpacks it). */
const UPLOAD_DONE_MS = 10 * 60_000;

/** A call to runtime `runtime`'s engine that got no answer within the bound: 503, retryable. */
export class EngineTimeout extends ApiError {
  constructor(
    readonly runtime: string,
    secs: number,
  ) {
    super("unavailable", `the ${runtime} runtime does not answer (no answer from its engine within ${secs} s)`, { retryable: true });
  }
}

/** The bound in ms (HOLM_ENGINE_TIMEOUT_SECS). */
export function engineTimeoutMs(): number {
  return env().HOLM_ENGINE_TIMEOUT_SECS * 1000;
}

type DialOptions = { file?: unknown; abortSignal?: AbortSignal; [k: string]: unknown };
type Dial = (options: DialOptions, callback: (err: unknown, data?: unknown) => void) => void;
const BOUND = Symbol("holm.engineBound");

/** Makes every request of `docker` fail with EngineTimeout when its engine does not answer in time. Idempotent. */
export function boundEngine(docker: Docker, runtime: string, ms = engineTimeoutMs()): Docker {
  const modem = docker.modem as unknown as { dial: Dial; [BOUND]?: true };
  if (modem[BOUND]) return docker;
  modem[BOUND] = true;
  const dial = modem.dial.bind(modem);
  modem.dial = (options, callback) => {
    const abort = new AbortController();
    const outer = options.abortSignal;
    if (outer) {
      if (outer.aborted) abort.abort(outer.reason);
      else outer.addEventListener("abort", () => abort.abort(outer.reason), { once: true });
    }
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = (wait: number) => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        if (done) return;
        done = true;
        // Ends the request and its socket: nothing of it lingers on the frozen engine.
        abort.abort();
        callback(new EngineTimeout(runtime, Math.round(ms / 1000)));
      }, wait);
    };
    let file = options.file;
    const upload = file && typeof (file as NodeJS.ReadableStream).pipe === "function" && !Buffer.isBuffer(file);
    if (upload) {
      // Timed by its flow: each chunk the engine takes restarts the clock.
      const src = file as NodeJS.ReadableStream;
      const counted = new Transform({
        transform(chunk, _enc, next) {
          if (!done) arm(ms);
          next(null, chunk);
        },
        flush(next) {
          if (!done) arm(UPLOAD_DONE_MS);
          next();
        },
      });
      src.on("error", (err) => counted.destroy(err as Error));
      file = src.pipe(counted);
    }
    arm(ms);
    dial({ ...options, file, abortSignal: abort.signal }, (err, data) => {
      if (done) {
        // Answered after the caller was told it did not: nobody reads it.
        (data as { destroy?: () => void } | undefined)?.destroy?.();
        return;
      }
      done = true;
      clearTimeout(timer);
      callback(err, data);
    });
  };
  return docker;
}

/** `p`, or `fallback` once `ms` passed (the reaper's and boot's ping: an engine that is slow is taken as away). */
export function orAfter<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([p, new Promise<T>((resolve) => (timer = setTimeout(() => resolve(fallback), ms)))]).finally(() => clearTimeout(timer));
}
