import { ApiError, notFound } from "~/utils/api-error.server";
import { principalAccess, sessionOfTicket } from "./access.server";
import type { Actor } from "./actor";
import { type BoxJson, getBox } from "./box.server";
import { type CdpClaims, mintCdpToken, verifyCdpToken } from "./cdp-token.server";
import { principalSeq } from "./principal-changes.server";

// Who may use a CDP token, beyond a good signature: checked at every HTTP call and socket
// connect through the proxy (and again for open sockets when the issuer's access changes,
// server/cdp-socket.ts). The issuer must still reach the box with the member role (CDP is
// control), the console session it was minted in must still be signed in, and the box must
// still exist. Refusals carry the seed's codes: a token whose issuer is gone is `unauthorized`
// (401) like a bad token; a box that is gone is `not_found` (404); a role too low `denied` (409).

const SERVER: Actor = { kind: "server" };

export interface CdpAccess {
  claims: CdpClaims;
  box: BoxJson;
  owner: string | null;
  sessionId?: string;
  /** When the access ends by itself: the token's expiry, or the issuing key's if sooner. */
  untilMs: number;
  /** principalSeq() when the check began: a socket compares it before registering. */
  seq: number;
}

/** Checks the issuer's access now; the error to answer with when it is gone. */
export async function issuerAccess(claims: CdpClaims, owner: string | null) {
  const sessionId = await sessionOfTicket(claims.issuer, claims.session_tag);
  if (sessionId === null) return { ok: false as const, err: new ApiError("unauthorized", "the console session this CDP token was minted in has ended") };
  const a = await principalAccess(claims.issuer, owner, "member", sessionId);
  if (!a.ok) return { ok: false as const, err: new ApiError(a.lost === "ended" ? "unauthorized" : "denied", a.why, { retryable: false }) };
  return { ok: true as const, sessionId, untilMs: a.untilMs };
}

/** Verifies a token and its issuer's access to the box it names (throws the refusal). */
export async function cdpAccess(token: string): Promise<CdpAccess> {
  const seq = principalSeq();
  const claims = verifyCdpToken(token);
  let box: BoxJson;
  try {
    box = await getBox(SERVER, claims.box_id);
  } catch (e) {
    throw e instanceof ApiError && e.code === "not_found" ? notFound(`box ${claims.box_id} no longer exists`) : e;
  }
  if (claims.screen >= box.screens) throw notFound(`box ${box.id} has no screen ${claims.screen}`);
  const owner = box.owner ?? null;
  const a = await issuerAccess(claims, owner);
  if (!a.ok) throw a.err;
  const untilMs = Math.min(claims.expires_at_ms, a.untilMs ?? Infinity);
  return { claims, box, owner, sessionId: a.sessionId, untilMs, seq };
}

/** The proxy's address for a token, on the origin the client reached (or HOLM_PUBLIC_URL). */
export function cdpUrl(origin: string, token: string): string {
  return `${origin.replace(/\/$/, "")}/v1/cdp/${token}`;
}

/** What Chromium names its own DevTools by (127.0.0.1:(9222+n), the Host the agent sends). */
const LOOP = String.raw`(?:127\.0\.0\.1|localhost|\[::1\]):\d{1,5}`;
/** A whole DevTools WebSocket address: `ws://127.0.0.1:9222/devtools/page/ID` and the like. */
const WS_ADDRESS = new RegExp(String.raw`^wss?://${LOOP}/devtools/([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)?)$`);
/** A DevTools front end of Chromium's own, with its `ws=` (or `wss=`) address. */
const FRONT_END = new RegExp(
  String.raw`^((?:https://chrome-devtools-frontend\.appspot\.com/serve_rev/@[A-Za-z0-9]+/|devtools://devtools/bundled/|/devtools/)[a-z_]+\.html\?)wss?=${LOOP}/devtools/([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)?)$`,
);

/**
 * Rewrites every DevTools address Chromium names in an answer (webSocketDebuggerUrl, the `ws=`
 * of devtoolsFrontendUrl) to go through the proxy. Only a string that is such an address as a
 * whole is rewritten, since the token goes into it: a program in the box can answer for
 * DevTools, and `ws://evil/?x=ws://127.0.0.1:9222/devtools/…` rewritten in place would send an
 * agent's CDP client, token and all, to another host. An answer that is not JSON is left as it is.
 */
export function rewriteDevtools(text: string, origin: string, token: string): string {
  const o = new URL(origin);
  const scheme = o.protocol === "https:" ? "wss" : "ws";
  const hostPath = `${o.host}/v1/cdp/${token}/devtools/`;
  let rewritten = false;
  const visit = (v: unknown): unknown => {
    if (typeof v === "string") {
      const ws = WS_ADDRESS.exec(v);
      if (ws) {
        rewritten = true;
        return `${scheme}://${hostPath}${ws[1]}`;
      }
      const fe = FRONT_END.exec(v);
      if (fe) {
        rewritten = true;
        return `${fe[1]}${scheme}=${hostPath}${fe[2]}`;
      }
      return v;
    }
    if (Array.isArray(v)) return v.map(visit);
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, visit(x)]));
    return v;
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text;
  }
  const out = visit(parsed);
  // Unchanged answers (/json/protocol, about 1 MB) go out as Chromium wrote them.
  return rewritten ? JSON.stringify(out) : text;
}

/**
 * `devtools_url` for a box answer on /v1 (docs/decisions/0011): only to a caller who may drive
 * (not a viewer), a token bound to that caller with the default lifetime, and only while the
 * box has a browser to reach. Never in what the server sends elsewhere (events, the console's
 * live list), so listings and events carry no credential.
 */
export function withDevtoolsUrl<B extends BoxJson>(actor: Actor, box: B, origin: string): B & { devtools_url?: string } {
  if (actor.kind === "workspace" && actor.role === "viewer") return box;
  if (box.state !== "ready" && box.state !== "paused") return box;
  const { token } = mintCdpToken(actor, box, 0);
  return { ...box, devtools_url: cdpUrl(origin, token) };
}
