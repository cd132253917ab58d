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
// A container's /wait answers its headers at once and its body only when the container exits
// (moby's postContainersWait flushes the headers first): it is bounded to its headers, so a
// helper that runs for a while is not taken for an engine that does not answer.

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
        dropUpload();
        callback(new EngineTimeout(runtime, Math.round(ms / 1000)));
      }, wait);
    };
    let file = options.file;
    const upload = file && typeof (file as NodeJS.ReadableStream).pipe === "function" && !Buffer.isBuffer(file);
    let source: { src: NodeJS.ReadableStream; counted: Transform } | undefined;
    // A request that failed (timed out, refused) closes its upload's source: a `docker save`
    // export feeding it would otherwise stay open on the local engine, stuck on a full pipe.
    const dropUpload = () => {
      if (!source) return;
      source.src.unpipe(source.counted);
      source.counted.destroy();
      (source.src as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
    };
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
      source = { src, counted };
    }
    // Asked as a stream, so the bound ends at its headers; its JSON body is read here, unbounded.
    const waits = !options.isStream && /^\/containers\/[^/]+\/wait\?/.test(String(options.path ?? ""));
    arm(ms);
    dial({ ...options, file, abortSignal: abort.signal, ...(waits ? { isStream: true } : {}) }, (err, data) => {
      if (done) {
        // Answered after the caller was told it did not: nobody reads it.
        (data as { destroy?: () => void } | undefined)?.destroy?.();
        return;
      }
      done = true;
      clearTimeout(timer);
      if (err) dropUpload();
      if (waits && !err) return readJson(data as NodeJS.ReadableStream, callback);
      callback(err, data);
    });
  };
  return docker;
}

/** The whole JSON body of `res`, to `callback` as docker-modem gives a JSON answer. */
function readJson(res: NodeJS.ReadableStream, callback: (err: unknown, data?: unknown) => void) {
  const chunks: Buffer[] = [];
  res.on("data", (c: Buffer) => chunks.push(c));
  res.on("error", (err) => callback(err));
  res.on("end", () => {
    const text = Buffer.concat(chunks).toString("utf8");
    try {
      callback(null, JSON.parse(text));
    } catch {
      callback(null, text);
    }
  });
}

/** `p`, or `fallback` once `ms` passed (the reaper's and boot's ping: an engine that is slow is taken as away). */
export function orAfter<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([p, new Promise<T>((resolve) => (timer = setTimeout(() => resolve(fallback), ms)))]).finally(() => clearTimeout(timer));
}
