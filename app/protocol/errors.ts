// The error table of the /v1 API (seed 000, "Errors"), shared by the server and the in-box agent:
// every error is {code, message, retryable} and each code has exactly one HTTP status. The codes
// after the seed's are ours, for answers the seed's table has no row for (README, "Errors"); none
// reuses a seed code with another status.

export const ERROR_STATUS = {
  bad_request: 400,
  unsupported: 400,
  not_found: 404,
  gone: 410,
  denied: 409,
  screen_unavailable: 409,
  failed: 422,
  transport: 502,
  unavailable: 503,
  timeout: 504,
  internal: 500,
  // Not in the seed:
  unauthorized: 401,
  forbidden: 403,
  method_not_allowed: 405,
  too_large: 413,
  misdirected: 421,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** The codes a caller may retry as they are unless the error says otherwise. */
export const RETRYABLE_BY_DEFAULT: ReadonlySet<ErrorCode> = new Set(["screen_unavailable", "transport", "unavailable", "timeout"]);
