import { randomBytes } from "node:crypto";
import { ApiError } from "~/utils/api-error.server";
import { openClaims, signClaims } from "~/utils/signed-claims.server";
import { type Actor, issuerOf } from "./actor";
import { sessionTag } from "./ticket.server";
import { CDP_TTL_DEFAULT_SECS, CDP_TTL_MAX_SECS } from "~/protocol/api-box";

export { CDP_TTL_DEFAULT_SECS, CDP_TTL_MAX_SECS };

// CDP tokens: the credential of the DevTools proxy (`/v1/cdp/{token}/…`), which Playwright and
// Puppeteer reach without a bearer header. Built like viewer tickets (ticket.server.ts), with a
// key of its own (derive("cdp-token")), so a ticket is never a CDP token nor the other way:
// `base64url(payload JSON) "." base64url(HMAC-SHA256(payload part))`, stateless, binding one
// box, one screen, the issuer, its expiry, a nonce and (minted in a console session) that
// session's tag. The signature proves only that this server issued it; every HTTP call and
// socket checks that the issuer still reaches the box (cdp-access.server.ts). Decisions:
// docs/decisions/0011-cdp-proxy.md.


export interface CdpClaims {
  box_id: string;
  screen: number;
  /** `server`, `user:<id>` or `key:<id>`. */
  issuer: string;
  expires_at_ms: number;
  nonce: string;
  session_tag?: string;
}

interface Payload {
  v: 1;
  b: string;
  s: number;
  i: string;
  e: number;
  n: string;
  a?: string;
}


/** Signs claims as they are; mintCdpToken is the way in (tests forge with other keys). */
export function signCdpToken(claims: Omit<CdpClaims, "nonce"> & { nonce?: string }): string {
  const payload: Payload = {
    v: 1,
    b: claims.box_id,
    s: claims.screen,
    i: claims.issuer,
    e: claims.expires_at_ms,
    n: claims.nonce ?? randomBytes(16).toString("base64url"),
    ...(claims.session_tag ? { a: claims.session_tag } : {}),
  };
  return signClaims("cdp-token", payload);
}

/**
 * A token for one screen of a box the route has checked the actor sees. CDP drives the browser,
 * so it is control: a person with the viewer role gets none (409 `denied`, as a role too low is
 * everywhere on /v1).
 */
export function mintCdpToken(actor: Actor, box: { id: string }, screen: number, ttlSecs = CDP_TTL_DEFAULT_SECS, now = Date.now()) {
  if (actor.kind === "workspace" && actor.role === "viewer") {
    throw new ApiError("denied", "DevTools drive the browser; a viewer may watch the screen but not get a CDP address");
  }
  const expires_at_ms = now + ttlSecs * 1000;
  const session_tag = actor.kind === "workspace" && actor.sessionId ? sessionTag(actor.sessionId) : undefined;
  const token = signCdpToken({ box_id: box.id, screen, issuer: issuerOf(actor), expires_at_ms, session_tag });
  return { token, expires_at_ms };
}

const refused = (message: string) => new ApiError("unauthorized", message);

/**
 * Reads a token: `unauthorized` when it is missing, not a CDP token, forged, unreadable or
 * expired. The MAC is compared in constant time before anything in the payload is trusted.
 */
export function verifyCdpToken(token: string, now = Date.now()): CdpClaims {
  const p = openClaims("cdp-token", token, "CDP token", "the CDP token is missing or is not one this server issues") as Payload;
  if (
    p?.v !== 1 ||
    typeof p.b !== "string" ||
    !Number.isInteger(p.s) ||
    p.s < 0 ||
    typeof p.i !== "string" ||
    !Number.isFinite(p.e) ||
    typeof p.n !== "string" ||
    (p.a !== undefined && typeof p.a !== "string")
  ) {
    throw refused("the CDP token cannot be read");
  }
  if (now >= p.e) throw refused("the CDP token has expired; ask POST /v1/boxes/{id}/cdp for a new one");
  if (p.e - now > CDP_TTL_MAX_SECS * 1000 + 60_000) throw refused("the CDP token's lifetime is longer than this server allows");
  return { box_id: p.b, screen: p.s, issuer: p.i, expires_at_ms: p.e, nonce: p.n, ...(p.a !== undefined ? { session_tag: p.a } : {}) };
}
