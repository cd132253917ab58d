// One error shape for every /v1 answer. Callers branch on `code`, never on the message.
// The seed's table (000, Errors) ties each code to one status. Ours adds `unauthorized` (401,
// wrong or missing credentials) and `method_not_allowed` (405, with an Allow header): a wrong
// method is neither of the 400 codes, and 405 + Allow is what HTTP clients expect.

export const ERROR_STATUS = {
  bad_request: 400,
  unsupported: 400,
  unauthorized: 401,
  not_found: 404,
  gone: 410,
  denied: 409,
  screen_unavailable: 409,
  failed: 422,
  transport: 502,
  unavailable: 503,
  timeout: 504,
  internal: 500,
  method_not_allowed: 405,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

const RETRYABLE_BY_DEFAULT: ReadonlySet<ErrorCode> = new Set([
  "screen_unavailable",
  "transport",
  "unavailable",
  "timeout",
]);

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly status: number;
  constructor(code: ErrorCode, message: string, opts: { retryable?: boolean; status?: number } = {}) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.retryable = opts.retryable ?? RETRYABLE_BY_DEFAULT.has(code);
    this.status = opts.status ?? ERROR_STATUS[code];
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
  return Response.json(err.toJSON(), { status: err.status, headers });
}

function toInternal(e: unknown): ApiError {
  console.error("[holm] internal error:", e);
  return new ApiError("internal", "the server failed to handle this request", { retryable: true });
}
