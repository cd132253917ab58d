import { ApiError, badRequest } from "~/utils/api-error.server";
import { agentFetch, readCapped } from "./agent.server";
import type { Actor } from "./actor";
import { type RunningBox, requireRunningBox } from "./box.server";
import { type CdpAccess, rewriteDevtools } from "./cdp-access.server";
import { controlRefusal, heldAgainst } from "./takeover.server";

// The DevTools HTTP endpoints through the proxy (`/v1/cdp/{token}/json[/…]`): relayed to the
// box's agent (signed, images/README.md "DevTools through the agent"), with every DevTools
// address in the answer rewritten to come back through the proxy.

const SERVER: Actor = { kind: "server" };
/** /json/protocol is the largest answer (about 1 MB today). */
const ANSWER_MAX = 16 * 1024 * 1024;
const RELAY_MS = 15_000;
/** What may follow /json: Chromium's endpoints (version, list, new, activate/ID, close/ID, protocol). */
const REST = /^(?:\/[A-Za-z0-9_-]{1,128}){0,2}\/?$/;
/** The endpoints that open, raise or close a tab: control, refused while a person holds the screen. */
const CONTROL = /^\/(?:new|activate|close)(?:\/|$)/;
const CLOSE = /^\/close(?:\/|$)/;

/**
 * The type of every answer, whatever the box's side sent: the answer goes out on the console's
 * origin, and a program in the box can put its own server where Chromium's DevTools listen.
 * Passed on, its `text/html` ran its script as the console for a person who opened the URL
 * (security review; tests/integration/cdp-answer-type). Chromium's /json endpoints are JSON.
 */
export const DEVTOOLS_ANSWER_TYPE = "application/json; charset=UTF-8";

/** Statuses whose answers have no body. */
const NO_BODY = new Set([204, 205, 304]);

export interface DevtoolsAnswer {
  status: number;
  text: string;
}

/** The running box of an access (a paused box waits until it resumes, as every call does). */
export function cdpBox(a: CdpAccess, signal?: AbortSignal): Promise<RunningBox> {
  return requireRunningBox(SERVER, a.claims.box_id, signal);
}

/**
 * One call to `/json{rest}{search}` of the token's screen, its answer rewritten for `origin`.
 * `rest` is what follows /json (checked: no dots, so the agent path cannot climb to another
 * screen).
 */
export async function relayDevtoolsHttp(a: CdpAccess, box: RunningBox, method: string, rest: string, search: string, origin: string, token: string): Promise<DevtoolsAnswer> {
  if (!REST.test(rest)) throw badRequest(`no DevTools endpoint /json${rest.slice(0, 60)}`);
  if (CONTROL.test(rest)) {
    const why = controlRefusal(a.claims.issuer, box.id, a.claims.screen);
    if (why) throw new ApiError("denied", `${why} (/json${rest} opens, raises or closes a tab)`, { retryable: true });
    // Closing a tab may end this screen's browser (with its last window), and the box with it:
    // a box-wide write, refused while a person holds any screen (cdp-guard.server.ts).
    const held = CLOSE.test(rest) ? heldAgainst(a.claims.issuer, box.id)?.screen : undefined;
    if (held !== undefined) {
      throw new ApiError("denied", `a person has control of screen ${held}; /json${rest} may end this screen's browser, and with it the box, so it waits until it is given back`, { retryable: true });
    }
  }
  const res = await agentFetch(box.id, box.address, `/screens/${a.claims.screen}/cdp/json${rest}${search}`, { method, timeoutMs: RELAY_MS });
  const text = (await readCapped(res, ANSWER_MAX)).toString("utf8");
  if (res.status === 422 && /does not answer/.test(text)) {
    throw new ApiError("screen_unavailable", `screen ${a.claims.screen}'s browser does not answer DevTools now`, { retryable: true });
  }
  // The status is passed on, so it must be one an answer with a body can carry: the box's side
  // chooses it, and a 204 or a 999 made the route throw (a 500).
  if (res.status < 200 || res.status > 599 || NO_BODY.has(res.status)) {
    throw new ApiError("transport", `screen ${a.claims.screen}'s DevTools answered with status ${res.status}, which is not a DevTools answer`, { retryable: true });
  }
  return { status: res.status, text: rewriteDevtools(text, origin, token) };
}

/** The browser-level WebSocket address through the proxy (what Puppeteer's browserWSEndpoint takes). */
export async function browserWsUrl(a: CdpAccess, box: RunningBox, origin: string, token: string): Promise<string> {
  const v = await relayDevtoolsHttp(a, box, "GET", "/version", "", origin, token);
  try {
    if (v.status === 200) return String((JSON.parse(v.text) as { webSocketDebuggerUrl: string }).webSocketDebuggerUrl);
  } catch {
    /* below */
  }
  throw new ApiError("screen_unavailable", `screen ${a.claims.screen}'s browser did not name its DevTools endpoint (${v.status})`, { retryable: true });
}
