import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import WebSocket, { WebSocketServer } from "ws";
import { signAgentRequest } from "~/models/agent.server";
import { type BoxJson, boxChanges, touchBox } from "~/models/box.server";
import { type CdpAccess, cdpAccess, issuerAccess } from "~/models/cdp-access.server";
import { type GuardState, guardCommand } from "~/models/cdp-guard.server";
import { cdpBox } from "~/models/cdp-relay.server";
import { concerns, onPrincipalChange, principalSeq } from "~/models/principal-changes.server";
import { controlRefusal, heldAgainst } from "~/models/takeover.server";
import { AGENT_PORT } from "~/protocol/agent";
import { ApiError, notFound, toApiError } from "~/utils/api-error.server";
import { crossSiteReason } from "./http-edge";
import { handshakeRefusal, refuseUpgrade as refuse, registerUpgrade } from "./upgrade-router";
import { cdpBufferMax, cdpMessageMax, reserveCdpPlace } from "./cdp-limits";
import { env } from "~/utils/env.server";
import { log } from "~/utils/log.server";
import { countSocket } from "~/utils/metrics.server";

// GET /v1/cdp/{token}/devtools/<kind>/<id>: the DevTools WebSocket of one screen's Chromium,
// through the server (docs/decisions/0011-cdp-proxy.md). The token is the credential; it and its
// issuer's access are checked before the upgrade is accepted, and the agent's relay in the box
// is opened (signed, images/README.md) before the client gets its 101, so a refusal is a plain
// HTTP answer with the seed's status. Then messages pass through: the browser's untouched (a
// screenshot is megabytes; nothing parses it), the client's untouched too unless a person holds
// the screen, when each is read and the commands that would change the screen are answered
// with a CDP error instead (app/models/cdp-guard.server.ts). A socket closes when its issuer's
// access ends (key revoked or expired, member removed, session ended), when its token expires
// and when the box stops or goes away. The token is never logged. How many sockets a screen and
// an issuer may have open, how large one message may be, and what all of them together may hold
// waiting for a reader that is behind, are bounded (server/cdp-limits.ts).

const UPGRADE = /^\/v1\/cdp\/([^/]*)\/devtools\/(.*)$/;
/** Chromium's WebSocket paths: /devtools/browser/<uuid>, /devtools/page/<id>. No dots: the agent path cannot climb. */
const REST = /^[a-z_]{1,32}\/[A-Za-z0-9_-]{1,128}$/;
const PAUSED_WAIT_MS = 60_000;
/**
 * Back-pressure, both ways: while more than HIGH_WATER waits to be written to one side, the
 * other side is not read (its TCP window closes, so its sender waits) until less than LOW_WATER
 * waits. A paused box keeps its CDP sockets open (docs/decisions/0011): its socket stops taking
 * bytes, and without this every message a client sent meanwhile was held here (a security
 * review grew the server by 1.2 GB). Memory per socket stays under HIGH_WATER plus the largest
 * message each way (one message, at most cdpMessageMax(), is read whole before it is sent on;
 * server/cdp-limits.ts bounds the sockets). Unlike x11vnc (app/protocol/rfb/pipe.ts), neither
 * side is shared by other connections, so pausing a reader stalls nobody else.
 */
const HIGH_WATER = 8 * 1024 * 1024;
const LOW_WATER = 1024 * 1024;
/**
 * Close codes: 1008 (policy) when access ends, 1001 when the box goes away, 1009 past the message
 * bound, 1013 (try again later) past the process's budget of bytes waiting (server/cdp-limits.ts).
 */
const CLOSE_POLICY = 1008;
const CLOSE_AWAY = 1001;
const CLOSE_TOO_BIG = 1009;
const CLOSE_BUSY = 1013;
/**
 * Liveness, as the viewer relay's (app/protocol/rfb/pipe.ts): a client whose connection vanished
 * without closing (a machine that slept or lost its network, a sandbox frozen and thrown away)
 * answers no ping and is ended within two of these. Without it its socket stayed open until its
 * token expired (an hour by default, up to a day), holding one of the key's CDP places
 * (server/cdp-limits.ts): a few such drops and the key was refused on that screen. Every
 * WebSocket client library answers pings itself (Playwright's, Puppeteer's, ws, browsers).
 */
const PING_MS = 30_000;

interface Conn {
  access: CdpAccess;
  client: WebSocket;
  up: WebSocket;
  timer?: NodeJS.Timeout;
  ping?: NodeJS.Timeout;
  /** Bytes given to either side's send and not yet written out (counted while open). */
  waiting: number;
  /** Those writes, oldest first: their bytes and when each was given (performance.now()). */
  writes: Set<{ n: number; at: number }>;
}

const open = new Set<Conn>();
/** The sum of every open socket's `waiting`: bounded by cdpBufferMax(). */
let waitingAll = 0;

/**
 * How many writers hold a socket's reading paused: ws has one pause flag, and the client may be
 * held by the browser's side (behind on its commands) and by its own (behind on the proxy's
 * answers) at once; it is read again only when neither holds it.
 */
const holds = new WeakMap<WebSocket, number>();
function hold(ws: WebSocket) {
  const n = holds.get(ws) ?? 0;
  holds.set(ws, n + 1);
  if (n === 0) ws.pause();
}
function release(ws: WebSocket) {
  const n = Math.max(0, (holds.get(ws) ?? 1) - 1);
  holds.set(ws, n);
  if (n === 0) ws.resume();
}
let wss: WebSocketServer | undefined;

function close(c: Conn, code: number, reason: string) {
  if (!open.delete(c)) return;
  waitingAll -= c.waiting;
  c.waiting = 0;
  c.writes.clear();
  clearTimeout(c.timer);
  clearInterval(c.ping);
  if (c.client.readyState === WebSocket.OPEN) c.client.close(code, reason.slice(0, 120));
  // Closing already (ws closes 1009 itself on a client's message past the bound): its close
  // frame goes out, and ws ends the connection after the handshake or its own timeout.
  else if (c.client.readyState !== WebSocket.CLOSING) c.client.terminate();
  c.up.terminate();
}

/**
 * Past the budget, closes the sockets furthest behind until the rest fit: those whose oldest write
 * has waited longest (of two as old, the one holding more), not whichever socket's write crossed
 * the line, nor the one holding the most: a client reading a large answer as it comes holds all
 * of it for a moment (closing it was closing the one client that read, while three that read
 * nothing stayed: tests/integration/cdp-budget-fair), one that reads nothing holds its oldest
 * write for good. Their bytes are then no longer counted: the box's side is ended at
 * once (what it was sending goes), and the close frame waits behind what the client has not read,
 * so a client that reads again gets it and the code; one that never does is ended by ws's close
 * timeout (30 s), and what it held with it.
 */
function shed() {
  const max = cdpBufferMax();
  while (waitingAll > max) {
    let worst: Conn | undefined;
    let worstAt = Infinity;
    for (const o of open) {
      const at = o.writes.values().next().value?.at;
      if (at === undefined) continue;
      if (at > worstAt || (at === worstAt && o.waiting <= worst!.waiting)) continue;
      worst = o;
      worstAt = at;
    }
    if (!worst) return;
    const { issuer, box_id, screen } = worst.access.claims;
    const mib = (worst.waiting / 1024 / 1024).toFixed(0);
    log.warn({ box_id, screen, issuer, waiting: worst.waiting }, "the CDP sockets' buffers are over HOLM_CDP_BUFFER_MIB; closing the one furthest behind");
    close(worst, CLOSE_BUSY, `holm: ${mib} MiB waited here unread; the server's CDP buffers are full (HOLM_CDP_BUFFER_MIB)`);
  }
}

/** The agent's relay for the token's screen, open (or the refusal to answer the client with). */
function openUpstream(access: CdpAccess, address: string, rest: string): Promise<WebSocket> {
  const path = `/screens/${access.claims.screen}/cdp/devtools/${rest}`;
  const up = new WebSocket(`ws://${address}:${AGENT_PORT}${path}`, {
    headers: { authorization: signAgentRequest(access.claims.box_id, "GET", path) },
    perMessageDeflate: false,
    maxPayload: cdpMessageMax(),
    handshakeTimeout: 10_000,
  });
  return new Promise((resolve, reject) => {
    up.once("open", () => resolve(up));
    up.once("unexpected-response", (_req, res) => {
      up.terminate();
      reject(
        res.statusCode === 404
          ? notFound(`screen ${access.claims.screen}'s browser has no DevTools target ${rest.slice(0, 80)}`)
          : new ApiError("transport", `screen ${access.claims.screen}'s DevTools refused the connection (${res.statusCode})`),
      );
    });
    up.once("error", (err) => reject(new ApiError("transport", `the server could not reach the box's DevTools: ${err.message}`)));
  });
}

async function accept(req: IncomingMessage, socket: Duplex, head: Buffer, match: RegExpExecArray) {
  // A WebSocket from a web page carries its Origin: refused, as Chromium itself refuses one. The
  // DevTools front end (devtools://devtools) is not a web page, and may connect.
  if (req.headers.origin !== "devtools://devtools") {
    const why = crossSiteReason(req.headers);
    if (why) return refuse(socket, new ApiError("forbidden", why));
  }
  // What ws would refuse, refused before the relay opens, with the seed's body (below, the
  // relay also closes with a handshake ws refuses for another reason).
  const bad = handshakeRefusal(req);
  if (bad) return refuse(socket, bad);
  const token = match[1]!;
  const rest = match[2]!;
  let access: CdpAccess;
  let up: WebSocket | undefined;
  // A place is taken before the box is waited for or its relay opened, and given back when the
  // client's connection ends; a refusal gives it back at once (a client that keeps its end of a
  // refused connection open would otherwise hold it). Every step until the upgrade is in the
  // try, the access check again included: when it threw (the store lost mid-query) the refusal
  // came from the route's catch, which gave back neither the place nor the box's DevTools
  // connection (a client keeping its end open held both: tests/integration/cdp-budget).
  let release = () => undefined as void;
  try {
    access = await cdpAccess(token);
    if (!REST.test(rest)) throw notFound("no such DevTools WebSocket; use the address /json/version or /json/list names");
    const place = reserveCdpPlace(access.claims);
    if (place instanceof ApiError) throw place;
    release = place;
    socket.once("close", release);
    if (socket.destroyed) release();
    const box = await cdpBox(access, AbortSignal.timeout(PAUSED_WAIT_MS));
    up = await openUpstream(access, box.address, rest);
    // Access changed while the relay opened: checked again, so the listener below misses none.
    if (access.seq !== principalSeq()) {
      const again = await issuerAccess(access.claims, access.owner);
      if (!again.ok) throw again.err;
      if (access.seq !== principalSeq()) throw new ApiError("unauthorized", "access changed while connecting; connect again");
    }
  } catch (e) {
    up?.terminate();
    release();
    // A store that could not be reached is `unavailable` (retryable), as on every /v1 route.
    return refuse(socket, toApiError(e));
  }
  if (socket.destroyed) return void up.terminate();
  // A handshake ws refuses never reaches its callback: the relay, open and in no check's reach,
  // stayed open (one DevTools connection and one open file per request).
  const dropUp = () => up.terminate();
  socket.once("close", dropUp);
  wss!.handleUpgrade(req, socket, head, (client) => {
    socket.off("close", dropUp);
    client.once("close", countSocket("cdp"));
    relay(access, client, up);
  });
}

function relay(access: CdpAccess, client: WebSocket, up: WebSocket) {
  const c: Conn = { access, client, up, waiting: 0, writes: new Set() };
  open.add(c);
  const { issuer, box_id, screen } = access.claims;
  const guard: GuardState = new Map();
  const left = Math.max(0, access.untilMs - Date.now());
  // Timers hold at most ~24.8 days; a token lives at most a day.
  c.timer = setTimeout(() => close(c, CLOSE_POLICY, "the CDP token (or the key that minted it) has expired"), Math.min(left, 2 ** 31 - 1));
  c.timer.unref();
  let answered = true;
  let queued = 0;
  client.on("pong", () => (answered = true));
  client.on("message", () => (answered = true));
  c.ping = setInterval(() => {
    if (client.readyState !== WebSocket.OPEN) return;
    // Not judged this round: a client held (the proxy reads nothing from it while the browser is
    // behind: its answer waits unread with the rest), or one still taking in what was queued for
    // it (a slow link reads a 32 MiB answer before the ping behind it).
    if (holds.get(client) || client.bufferedAmount < queued) answered = true;
    queued = client.bufferedAmount;
    if (!answered) return client.terminate();
    answered = false;
    client.ping();
  }, PING_MS);
  c.ping.unref();
  // One writer per side: sends to `to`, and stops reading `from` (the side whose message this
  // is) while `to` is behind; each write's completion looks again (ws has no drain event; a write
  // completes once the socket has taken it). The client is the source of two kinds of writes:
  // its commands to the browser, and, during a takeover, the proxy's own answers to it.
  const writer = (to: WebSocket) => {
    const held = new Set<WebSocket>();
    const check = () => {
      if (held.size && to.bufferedAmount < LOW_WATER) {
        for (const from of held) release(from);
        held.clear();
      }
    };
    return (data: Buffer | string, binary: boolean, from: WebSocket) => {
      if (!open.has(c)) return;
      // Counted until written out, against the process's budget as well as this socket's bound.
      const n = typeof data === "string" ? Buffer.byteLength(data) : data.length;
      const w = { n, at: performance.now() };
      c.writes.add(w);
      c.waiting += n;
      waitingAll += n;
      to.send(data, { binary }, () => {
        if (c.writes.delete(w)) {
          c.waiting -= n;
          waitingAll -= n;
        }
        check();
      });
      if (waitingAll > cdpBufferMax()) shed();
      if (!open.has(c)) return;
      if (!held.has(from) && to.bufferedAmount > HIGH_WATER) {
        held.add(from);
        hold(from);
      }
    };
  };
  const toBrowser = writer(up);
  const toClient = writer(client);
  client.on("message", (data: Buffer, isBinary) => {
    if (isBinary) return close(c, 1003, "DevTools takes text messages");
    if (up.readyState !== WebSocket.OPEN) return;
    // A script driving the browser uses the box: its idle timeout must not remove it mid-script.
    void touchBox(box_id).catch(() => undefined);
    // Read only while someone else holds a screen of the box; otherwise the bytes go as they
    // came. Another screen held: only what would end this screen's browser (and the box) is
    // refused.
    const own = controlRefusal(issuer, box_id, screen) !== undefined;
    const held = own ? screen : heldAgainst(issuer, box_id)?.screen;
    if (held === undefined) return toBrowser(data, false, client);
    // A message the guard cannot read ends this socket, never the server: a throw here would be
    // uncaught (a command nested 200,000 deep overflowed the stack of JSON.stringify).
    let r: ReturnType<typeof guardCommand>;
    try {
      r = guardCommand(data.toString("utf8"), held, guard, Date.now(), own ? "screen" : "box");
    } catch (err) {
      log.warn({ box_id, screen, issuer, err: String(err).slice(0, 200) }, "a CDP message could not be read during a takeover; closing its socket");
      return close(c, 1007, "holm: a command that could not be read during a takeover");
    }
    // An answer of the proxy's own is the client's doing: a client that does not read them is
    // not read either (a 4 MiB id echoed to a client that read nothing grew the server by 570 MB).
    if ("reply" in r) toClient(r.reply, false, client);
    else toBrowser(r.forward, false, client);
  });
  up.on("message", (data: Buffer, isBinary) => {
    if (client.readyState === WebSocket.OPEN) toClient(data, isBinary, up);
  });
  client.on("close", () => close(c, 1000, ""));
  up.on("close", (code) => close(c, code === 1000 ? 1000 : CLOSE_AWAY, "the browser closed the connection"));
  client.on("error", () => close(c, 1011, ""));
  up.on("error", (err: Error & { code?: string }) => {
    if (err.code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH") {
      log.info({ box_id, screen, issuer }, "a CDP message from the browser was over the bound; closing its socket");
      return close(c, CLOSE_TOO_BIG, `holm: a message from the browser is over ${env().HOLM_CDP_MESSAGE_MIB} MiB, the most one CDP message may be (HOLM_CDP_MESSAGE_MIB)`);
    }
    close(c, 1011, "the box's DevTools connection failed");
  });
}

async function recheck(c: Conn) {
  const a = await issuerAccess(c.access.claims, c.access.owner).catch((err) => {
    log.error({ err }, "checking a CDP socket's access failed");
    return { ok: false as const, err: new ApiError("unauthorized", "your access could not be confirmed; connect again") };
  });
  if (!a.ok) close(c, CLOSE_POLICY, a.err.message);
}

/** Registers the DevTools socket's upgrade route and its listeners (once, before listening). */
export function registerCdpSocket() {
  if (wss) return;
  wss = new WebSocketServer({ noServer: true, clientTracking: false, perMessageDeflate: false, maxPayload: cdpMessageMax() });
  registerUpgrade(UPGRADE, (req, socket, head, match) => {
    socket.on("error", () => undefined);
    accept(req, socket, head, match).catch((err) => {
      log.error({ err }, "CDP socket");
      refuse(socket, new ApiError("internal", "the DevTools socket failed to open"));
    });
  });
  onPrincipalChange((change) => {
    for (const c of open) if (concerns(change, c.access.claims.issuer, c.access.sessionId)) void recheck(c);
  });
  boxChanges.on("change", (box: BoxJson) => {
    if (box.state === "ready" || box.state === "paused") return;
    for (const c of open) if (c.access.claims.box_id === box.id) close(c, CLOSE_AWAY, `the box is ${box.state}`);
  });
}
