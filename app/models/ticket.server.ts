import { createHmac, randomBytes } from "node:crypto";
import type { ViewerMode } from "~/protocol/viewer-socket";
import { ApiError } from "~/utils/api-error.server";
import { derive } from "~/utils/secret.server";
import { openClaims, signClaims } from "~/utils/signed-claims.server";
import { type Actor, issuerOf } from "./actor";

// Viewer tickets: the credential of the viewer socket (a browser cannot put a bearer token on a
// WebSocket). A ticket is `base64url(payload JSON) "." base64url(HMAC-SHA256(payload part))`,
// keyed with derive("viewer-ticket"), so it needs no storage and survives a restart of the server
// with the same key. It binds one box, one screen, the highest mode its holder may use, who it
// was issued to, when it expires (15 minutes) and a random nonce; one a person minted in the
// console also names that session by a tag (a MAC of its id, never the id), so the ticket dies
// with the session. Signing proves only that the server issued it: the viewer socket checks, at
// connect and whenever access changes, that the issuer may still reach the box
// (app/models/access.server.ts).

export type { ViewerMode };

export const TICKET_TTL_MS = 15 * 60_000;

export interface TicketClaims {
  box_id: string;
  screen: number;
  /** The highest mode the ticket allows: a `control` ticket also opens `view`. */
  mode: ViewerMode;
  /** `server`, `user:<id>` or `key:<id>`. */
  issuer: string;
  expires_at_ms: number;
  nonce: string;
  /** The tag of the console session it was minted in, when a person minted it there. */
  session_tag?: string;
}

export interface IssuedTicket {
  ticket: string;
  expires_at_ms: number;
  mode: ViewerMode;
}

interface Payload {
  v: 1;
  b: string;
  s: number;
  m: "v" | "c";
  i: string;
  e: number;
  n: string;
  a?: string;
}


/** The tag a ticket carries for the session it was minted in: names it without revealing its id. */
export function sessionTag(sessionId: string): string {
  return createHmac("sha256", derive("viewer-ticket")).update(`session:${sessionId}`).digest("base64url").slice(0, 22);
}

/** The highest viewer mode an actor may have: people with the viewer role only watch. */
export function allowedMode(actor: Actor): ViewerMode {
  return actor.kind === "workspace" && actor.role === "viewer" ? "view" : "control";
}

/** Signs claims as they are. issueTicket is the way in; this is for tests and for tooling. */
export function signTicket(claims: Omit<TicketClaims, "nonce"> & { nonce?: string }): string {
  const payload: Payload = {
    v: 1,
    b: claims.box_id,
    s: claims.screen,
    m: claims.mode === "control" ? "c" : "v",
    i: claims.issuer,
    e: claims.expires_at_ms,
    n: claims.nonce ?? randomBytes(16).toString("base64url"),
    ...(claims.session_tag ? { a: claims.session_tag } : {}),
  };
  return signClaims("viewer-ticket", payload);
}

/**
 * Issues a ticket for one screen of a box the caller may already see (the route checks that).
 * Without `wantMode` the ticket carries the highest mode the actor may use now; asking for more
 * than that is refused. `controlBlocked` is why control is not the caller's now (a person holds
 * the screen): asking for control then answers 409 `denied` (retryable), asking for nothing
 * gets a view ticket.
 */
export function issueTicket(
  actor: Actor,
  box: { id: string },
  screen: number,
  wantMode?: ViewerMode,
  opts: { controlBlocked?: string; now?: number } = {},
): IssuedTicket {
  const now = opts.now ?? Date.now();
  const allowed = allowedMode(actor);
  if (wantMode === "control" && allowed !== "control") {
    throw new ApiError("denied", "a viewer may watch this screen but not control it; ask for mode view");
  }
  if (wantMode === "control" && opts.controlBlocked) throw new ApiError("denied", opts.controlBlocked, { retryable: true });
  const mode = wantMode ?? (opts.controlBlocked ? "view" : allowed);
  const expires_at_ms = now + TICKET_TTL_MS;
  const session_tag = actor.kind === "workspace" && actor.sessionId ? sessionTag(actor.sessionId) : undefined;
  const ticket = signTicket({ box_id: box.id, screen, mode, issuer: issuerOf(actor), expires_at_ms, session_tag });
  return { ticket, expires_at_ms, mode };
}

/** Not a credential this server accepts (missing, forged, unreadable, expired): as a bad bearer token on /v1. */
const refused = (message: string) => new ApiError("unauthorized", message);
/** A good ticket asked for what it does not allow (another box or screen, control with a view ticket). */
const notThis = (message: string) => new ApiError("denied", message, { retryable: false });

/**
 * Checks a ticket for a connection to `boxId`/`screen` in `mode`. Throws `unauthorized` (missing,
 * not a ticket, forged, unreadable, expired) or `denied` (a ticket for another box or screen, a
 * view ticket used to control): the seed's codes, so the upgrade answers 401 or 409. The MAC is
 * compared in constant time, before anything in the payload is trusted.
 */
export function verifyTicket(token: string, boxId: string, screen: number, mode: ViewerMode, now = Date.now()): TicketClaims {
  const p = openClaims("viewer-ticket", token, "ticket", "the ticket is missing or is not a viewer ticket") as Payload;
  if (
    p?.v !== 1 ||
    typeof p.b !== "string" ||
    !Number.isInteger(p.s) ||
    (p.m !== "v" && p.m !== "c") ||
    typeof p.i !== "string" ||
    !Number.isFinite(p.e) ||
    typeof p.n !== "string" ||
    (p.a !== undefined && typeof p.a !== "string")
  ) {
    throw refused("the ticket cannot be read");
  }
  const claims: TicketClaims = {
    box_id: p.b,
    screen: p.s,
    mode: p.m === "c" ? "control" : "view",
    issuer: p.i,
    expires_at_ms: p.e,
    nonce: p.n,
    ...(p.a !== undefined ? { session_tag: p.a } : {}),
  };
  if (now >= claims.expires_at_ms) throw refused("the ticket has expired; ask for a new one");
  if (claims.expires_at_ms - now > TICKET_TTL_MS + 60_000) throw refused("the ticket's lifetime is longer than this server allows");
  if (claims.box_id !== boxId) throw notThis("the ticket is for another box");
  if (claims.screen !== screen) throw notThis(`the ticket is for screen ${claims.screen}, not ${screen}`);
  if (mode === "control" && claims.mode !== "control") throw notThis("the ticket allows watching only, not control");
  return claims;
}
