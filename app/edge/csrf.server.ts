import { createHmac, timingSafeEqual } from "node:crypto";
import { serverKey } from "~/utils/secret.server";

// One CSRF token per session: an HMAC of the session id under the server key. Console forms carry
// it as the `csrf` field; a console page's script sends it as the x-holm-csrf header on /v1
// (docs/decisions/0005). It is never stored, and a new session has a new one.

export const CSRF_HEADER = "x-holm-csrf";

export function csrfFor(sessionId: string): string {
  return createHmac("sha256", serverKey()).update(`csrf:${sessionId}`).digest("base64url");
}

/** Whether `given` is the session's token, compared in constant time. */
export function csrfMatches(given: string | null | undefined, sessionId: string): boolean {
  if (typeof given !== "string") return false;
  const want = Buffer.from(csrfFor(sessionId));
  const got = Buffer.from(given);
  return got.length === want.length && timingSafeEqual(got, want);
}
