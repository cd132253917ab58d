import { type ErrorCode, ERROR_STATUS, RETRYABLE_BY_DEFAULT } from "~/protocol/errors";
import { env } from "./env.server";
import { log } from "./log.server";
import { jsonResponse } from "./http-bodies.server";

// One error shape for every /v1 answer (the table is app/protocol/errors.ts). Callers branch on
// `code`, never on the message.

export { ERROR_STATUS, type ErrorCode };

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly status: number;
  /**
   * The request field the refusal is about, as a dotted path (`metadata.labels.team`), when it is
   * about one: the console marks that field of its form. Not in the /v1 body (the message says it).
   */
  readonly at: string | undefined;
  constructor(code: ErrorCode, message: string, opts: { retryable?: boolean; at?: string } = {}) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.at = opts.at;
    this.retryable = opts.retryable ?? RETRYABLE_BY_DEFAULT.has(code);
    // One status per code, always: a status of its own needs a code of its own.
    this.status = ERROR_STATUS[code];
  }
  toJSON() {
    return { code: this.code, message: this.message, retryable: this.retryable };
  }
}

export const badRequest = (message: string, at?: string) => new ApiError("bad_request", message, { at });
export const unsupported = (message: string) => new ApiError("unsupported", message);
export const notFound = (message: string) => new ApiError("not_found", message);

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}

export function errorResponse(e: unknown): Response {
  const err = isApiError(e) ? e : toInternal(e);
  const headers: Record<string, string> = {};
  if (err.status === 401) headers["www-authenticate"] = 'Bearer realm="holm"';
  return jsonResponse(err.toJSON(), { status: err.status, headers });
}

/**
 * `e` as the error to answer with: itself if an ApiError, `unavailable` (503, retryable) if it
 * says the store or Redis could not be reached, else `internal` (logged either way).
 */
export function toApiError(e: unknown): ApiError {
  return isApiError(e) ? e : toInternal(e);
}

function toInternal(e: unknown): ApiError {
  const away = unreachable(e);
  if (away) {
    // The detail (driver text, addresses) is for the log; the caller learns what to do.
    log.warn({ err: e }, `${away} not reachable`);
    return new ApiError("unavailable", `the ${away} is not reachable; try again shortly`, { retryable: true });
  }
  log.error({ err: e }, "internal error");
  return new ApiError("internal", "the server failed to handle this request", { retryable: true });
}

// Seed 000: `unavailable` 503 "the runtime or store is not available". Only errors of reaching
// it: a constraint or a bad query stays `internal`, as it is a bug, not an outage.
const NET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);
// PostgreSQL: class 08 (connection exception), shutting down, not accepting connections, too many.
const PG_AWAY = /^(08...|57P0[1-3]|53300)$/;
// node-postgres's own texts for a connection lost or not made. Not "connection refused": the
// engine's errors say it of a box's port (`dial tcp 172.18.0.5:9222: connect: connection
// refused`), and pg's refusal is an ECONNREFUSED on the store's port, which the address check takes.
const PG_CLIENT_AWAY = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i;

function isStoreAddress(port: unknown): boolean {
  const e = env();
  if (e.HOLM_STORAGE_BACKEND !== "postgres" || !e.HOLM_DATABASE_URL || port === undefined) return false;
  try {
    return Number(new URL(e.HOLM_DATABASE_URL).port || 5432) === Number(port);
  } catch {
    return false;
  }
}

/** "store" or "cluster's Redis" when `e` says one of them could not be reached; undefined otherwise. */
export function unreachable(e: unknown, depth = 0): "store" | "cluster's Redis" | undefined {
  if (!(e instanceof Error) || depth > 3) return undefined;
  const err = e as Error & { code?: unknown; cause?: unknown; errors?: unknown[] };
  if (err.name === "MaxRetriesPerRequestError" || /^Connection is closed\.?$/.test(err.message)) return "cluster's Redis";
  const code = typeof err.code === "string" ? err.code : "";
  if (PG_AWAY.test(code) || PG_CLIENT_AWAY.test(err.message)) return "store";
  // A socket error names the store only when it is the store's address (the engine's are its own).
  if (NET_CODES.has(code) && isStoreAddress((err as { port?: unknown }).port)) return "store";
  // An AggregateError (a refused connection on each address) or a wrapped cause.
  for (const inner of [...(Array.isArray(err.errors) ? err.errors : []), err.cause]) {
    const found = unreachable(inner, depth + 1);
    if (found) return found;
  }
  return undefined;
}
