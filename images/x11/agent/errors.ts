import { ERROR_STATUS } from "../../../app/protocol/errors";

// Error codes shared with the server: the subset of its table (app/protocol/errors.ts) a box
// can produce, each with the status that table gives it.
export type ErrorCode = "bad_request" | "unsupported" | "not_found" | "denied" | "failed" | "timeout" | "internal" | "unauthorized" | "screen_unavailable";

export const HTTP_STATUS: Record<ErrorCode, number> = ERROR_STATUS;

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
