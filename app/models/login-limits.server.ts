import { ApiError } from "~/utils/api-error.server";
import { SharedRateLimiter } from "~/utils/rate-limit.server";

// Password guesses, counted for all the servers of a cluster together (their Redis), so more
// servers do not allow more guesses. Per address and per account: a guesser is slowed whichever
// it varies. A password change's current password is a guess too (a session someone took must not
// be a way to guess the password behind it), counted per account on a count of its own: the
// owner, logged in, still changes a password someone is guessing at the log-in form.

export const guessesByAddress = new SharedRateLimiter("login-address", 20, 60_000);
export const guessesByAccount = new SharedRateLimiter("login-account", 8, 15 * 60_000);
export const guessesAtChange = new SharedRateLimiter("password-change", 8, 15 * 60_000);

/** The refusal once a limit is reached; `wait` in seconds. */
export function tooManyGuesses(wait: number): ApiError {
  return new ApiError("denied", `too many failed attempts; try again in ${wait} s`);
}
