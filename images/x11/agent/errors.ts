// Error codes shared with the server (the subset of its `/v1` codes a box can produce).
export type ErrorCode = "bad_request" | "unsupported" | "not_found" | "denied" | "failed" | "timeout" | "internal" | "unauthorized";

export const HTTP_STATUS: Record<ErrorCode, number> = {
  bad_request: 400,
  unsupported: 400,
  unauthorized: 401,
  not_found: 404,
  denied: 409,
  failed: 422,
  internal: 500,
  timeout: 504,
};

export class AgentError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** Any thrown value → the code and message a caller sees. Unknown errors become `failed`. */
export function describeError(err: unknown): { code: ErrorCode; message: string } {
  if (err instanceof AgentError) return { code: err.code, message: err.message };
  if (err instanceof Error) return { code: "failed", message: err.message };
  return { code: "failed", message: String(err) };
}
