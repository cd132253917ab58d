import { ApiError } from "~/utils/api-error.server";

/** The ApiError `fn` throws; fails the test when it throws nothing (or something else). */
export function refusal(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error("expected a refusal");
}
