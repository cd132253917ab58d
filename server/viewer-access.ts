import { principalAccess, sessionOfTicket } from "~/models/access.server";
import { principalSeq } from "~/models/principal-changes.server";
import { controlRefusal } from "~/models/takeover.server";
import type { TicketClaims, ViewerMode } from "~/models/ticket.server";
import { ApiError } from "~/utils/api-error.server";

// Who may open a viewer socket, beyond a well-signed ticket: its issuer must still reach the box
// (key live, person still a member with the role the mode needs, the console session it was
// minted in still signed in), and control must be the issuer's now (no one else holds the screen).

// A refusal carries the seed's code, and so its status (the upgrade answers ERROR_STATUS[code]):
// an issuer that is gone (key revoked or expired, member removed, session ended) is
// `unauthorized` 401, as bad credentials are on /v1; one that remains but may not do this (its
// role) is `denied` 409, as a role too low is on /v1.
export type ViewerAccess =
  | { ok: true; seq: number; owner: string | null; sessionId?: string; untilMs?: number }
  | { ok: false; err: ApiError };

const no = (lost: "ended" | "role", why: string): ViewerAccess => ({
  ok: false,
  err: new ApiError(lost === "ended" ? "unauthorized" : "denied", why, { retryable: false }),
});

async function once(claims: TicketClaims, owner: string | null, mode: ViewerMode): Promise<ViewerAccess> {
  const seq = principalSeq();
  const sessionId = await sessionOfTicket(claims.issuer, claims.session_tag);
  if (sessionId === null) return no("ended", "the console session this ticket was issued in has ended; sign in again");
  const access = await principalAccess(claims.issuer, owner, mode === "control" ? "member" : "viewer", sessionId);
  if (!access.ok) return no(access.lost, access.why);
  if (mode === "control") {
    const why = controlRefusal(claims.issuer, claims.box_id, claims.screen);
    if (why) return { ok: false, err: new ApiError("denied", why, { retryable: true }) };
  }
  return { ok: true, seq, owner, sessionId, untilMs: access.untilMs };
}

/**
 * Checks until no access change happened during the check, so that what follows synchronously
 * (registering the connection, where the revocation listener finds it) misses none.
 */
export async function viewerAccess(claims: TicketClaims, owner: string | null, mode: ViewerMode): Promise<ViewerAccess> {
  for (;;) {
    const a = await once(claims, owner, mode);
    if (!a.ok || a.seq === principalSeq()) return a;
  }
}

/**
 * Synchronous, for just before registering: whether `a` still holds (no access changed since it
 * was checked, and no one took the screen meanwhile). When not, check again with viewerAccess.
 */
export function stillCurrent(a: ViewerAccess & { ok: true }, claims: TicketClaims, mode: ViewerMode): boolean {
  if (a.seq !== principalSeq()) return false;
  return !(mode === "control" && controlRefusal(claims.issuer, claims.box_id, claims.screen));
}
