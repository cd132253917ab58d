import { type ErrorCode, ERROR_STATUS, RETRYABLE_BY_DEFAULT } from "~/protocol/errors";
import { log } from "./log.server";
import { jsonResponse } from "./http-bodies.server";

// One error shape for every /v1 answer (the table is app/protocol/errors.ts). Callers branch on
// `code`, never on the message.

export { ERROR_STATUS, type ErrorCode };

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly status: number;
  constructor(code: ErrorCode, message: string, opts: { retryable?: boolean } = {}) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.retryable = opts.retryable ?? RETRYABLE_BY_DEFAULT.has(code);
    // One status per code, always: a status of its own needs a code of its own.
    this.status = ERROR_STATUS[code];
  }
  toJSON() {
    return { code: this.code, message: this.message, retryable: this.retryable };
  }
}

export const badRequest = (message: string) => new ApiError("bad_request", message);
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

function toInternal(e: unknown): ApiError {
  log.error({ err: e }, "internal error");
  return new ApiError("internal", "the server failed to handle this request", { retryable: true });
}
