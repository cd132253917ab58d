import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer } from "ws";
import type { Actor } from "~/models/actor";
import { type RunningBox, getBox, requireRunningBox } from "~/models/box.server";
import { type TicketClaims, type ViewerMode, verifyTicket } from "~/models/ticket.server";
import { vncPort } from "~/protocol/agent";
import { VIEWER_SOCKET_PATH } from "~/protocol/viewer-socket";
import { ApiError, isApiError, notFound } from "~/utils/api-error.server";
import { handshakeRefusal, refuseUpgrade as refuse, registerUpgrade } from "./upgrade-router";
import { type ViewerAccess, stillCurrent, viewerAccess } from "./viewer-access";
import { connectVnc, relay, startVncLogin } from "./viewer-relay";
import { env } from "~/utils/env.server";
import { log } from "~/utils/log.server";
import { countSocket } from "~/utils/metrics.server";

// GET /v1/boxes/{id}/screens/{screen}/viewer/socket?ticket=…&mode=view|control
//
// A raw WebSocket to the screen's VNC server (x11vnc on ADDRESS:5900+screen), for noVNC. This
// module is the upgrade: the ticket is the credential (no bearer token); it is checked, with the
// box and its issuer's access, before the upgrade is accepted, and a refusal is a plain HTTP
// answer. Once accepted, server/viewer-relay.ts carries the bytes (its own VNC connection per
// viewer, the login, flow control and the RFB filter).

const SERVER: Actor = { kind: "server" };
/** How long an upgrade on a paused box waits (not yet accepted) for it to resume; then 504 `timeout`. */
export const PAUSED_SOCKET_WAIT_MS = 60_000;
/** What a client may send before its upgrade is accepted (a WebSocket client sends nothing). */
const EARLY_MAX = 64 * 1024;

let wss: WebSocketServer | undefined;

/**
 * Viewer sockets open (or opening) per screen, and per issuer on a screen. Each is an x11vnc
 * client, and x11vnc serves its clients one after the other: one ticket reused 1,100 times
 * slowed every other viewer's first frame from ~1 s to 5–6 s. Past HOLM_VIEWERS_PER_SCREEN (half
 * of it for one issuer, so one key or person cannot take every place) a socket is refused
 * `503 unavailable`, retryable once one closes.
 */
const open = new Map<string, number>();
function reserve(claims: TicketClaims): (() => void) | ApiError {
  const max = env().HOLM_VIEWERS_PER_SCREEN;
  const screenKey = `${claims.box_id}:${claims.screen}`;
  const issuerKey = `${screenKey}:${claims.issuer}`;
  const onScreen = open.get(screenKey) ?? 0;
  const byIssuer = open.get(issuerKey) ?? 0;
  const mine = Math.max(1, Math.floor(max / 2));
  if (onScreen >= max || byIssuer >= mine) {
    const why = onScreen >= max ? `screen ${claims.screen} of box ${claims.box_id} has ${onScreen} viewers, the most it takes (HOLM_VIEWERS_PER_SCREEN)` : `this issuer already has ${byIssuer} viewers of screen ${claims.screen} of box ${claims.box_id}, the most one issuer may have`;
    return new ApiError("unavailable", `${why}; close one and try again`);
  }
  open.set(screenKey, onScreen + 1);
  open.set(issuerKey, byIssuer + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    for (const k of [screenKey, issuerKey]) {
      const n = (open.get(k) ?? 1) - 1;
      if (n > 0) open.set(k, n);
      else open.delete(k);
    }
  };
}

/** Registers the socket's upgrade route (call once, before the server listens). */
export function registerViewerSocket() {
  if (wss) return;
  wss = new WebSocketServer({
    noServer: true,
    clientTracking: false,
    perMessageDeflate: false,
    maxPayload: 32 * 1024 * 1024,
    // noVNC asks for no subprotocol; older clients offer `binary`. Echo that one only.
    handleProtocols: (protocols) => (protocols.has("binary") ? "binary" : false),
  });
  registerUpgrade(VIEWER_SOCKET_PATH, (req, socket, head, match) => {
    socket.on("error", () => undefined);
    accept(req, socket, head, match).catch((err) => {
      log.error({ err }, "viewer socket");
      refuse(socket, new ApiError("internal", "the viewer socket failed to open"));
    });
  });
}

/**
 * Until the upgrade is accepted nothing reads the socket, so a client that leaves (while a paused
 * box is waited for, say) would go unnoticed. This reads it meanwhile: `left` aborts when the
 * client ends or closes it, and `take()` stops reading and hands back what arrived (a WebSocket
 * client sends nothing before the 101, but nothing is lost if one does).
 */
function watchClient(socket: Duplex) {
  const left = new AbortController();
  const early: Buffer[] = [];
  let size = 0;
  const keep = (chunk: Buffer) => {
    size += chunk.length;
    // A WebSocket client sends nothing before the 101; one that pours bytes in while a paused
    // box is waited for is not buffered without bound.
    if (size > EARLY_MAX) {
      socket.destroy();
      leave();
      return;
    }
    early.push(chunk);
  };
  const leave = () => left.abort();
  socket.on("data", keep);
  socket.once("end", leave);
  socket.once("close", leave);
  return {
    left: left.signal,
    take(): Buffer[] {
      socket.off("data", keep);
      socket.off("end", leave);
      socket.off("close", leave);
      return early;
    },
  };
}

async function accept(req: IncomingMessage, socket: Duplex, head: Buffer, match: RegExpExecArray) {
  // Before a place is taken and VNC connected: a handshake ws refuses never reached its callback.
  const bad = handshakeRefusal(req);
  if (bad) return refuse(socket, bad);
  const url = new URL(req.url ?? "/", "http://viewer");
  let id: string;
  try {
    id = decodeURIComponent(match[1]!);
  } catch {
    return refuse(socket, notFound("no such box"));
  }
  const screenRaw = match[2]!;
  const modeRaw = url.searchParams.get("mode") ?? "view";
  if (modeRaw !== "view" && modeRaw !== "control") {
    return refuse(socket, new ApiError("bad_request", `mode must be view or control; got "${modeRaw.slice(0, 20)}"`));
  }
  const mode: ViewerMode = modeRaw;
  if (!/^[0-9]{1,2}$/.test(screenRaw)) return refuse(socket, notFound(`no screen ${screenRaw.slice(0, 20)}`));
  const screen = Number(screenRaw);

  let claims: TicketClaims;
  try {
    claims = verifyTicket(url.searchParams.get("ticket") ?? "", id, screen, mode);
  } catch (e) {
    return refuse(socket, isApiError(e) ? e : new ApiError("unauthorized", "the ticket is not valid"));
  }

  const release = reserve(claims);
  if (release instanceof ApiError) return refuse(socket, release);
  // Released when the socket ends, whether it was refused, left or relayed.
  socket.once("close", release);

  // The ticket proved the box; now the box must be running, with this screen. A paused box is
  // waited for, as every call on it is (the seed: calls wait until it resumes), up to
  // PAUSED_SOCKET_WAIT_MS, and no longer than the client stays.
  const client = watchClient(socket);
  const waited = new AbortController();
  const limit = setTimeout(() => waited.abort(), PAUSED_SOCKET_WAIT_MS);
  const stopWaiting = () => waited.abort();
  client.left.addEventListener("abort", stopWaiting);
  let box: RunningBox;
  let owner: string | null = null;
  try {
    const found = await getBox(SERVER, id);
    owner = found.owner ?? null;
    if (screen >= found.screens) throw notFound(`box ${id} has no screen ${screen}`);
    // Before any wait: a ticket whose issuer lost its access is refused now, not held until the
    // box resumes (checked again below, after the wait).
    const before = await viewerAccess(claims, owner, mode);
    if (!before.ok) throw before.err;
    box = await requireRunningBox(SERVER, id, waited.signal);
  } catch (e) {
    if (client.left.aborted) return void socket.destroy();
    return refuse(socket, isApiError(e) ? e : new ApiError("internal", "the box could not be looked up"));
  } finally {
    clearTimeout(limit);
    client.left.removeEventListener("abort", stopWaiting);
  }
  if (socket.destroyed || client.left.aborted) return void socket.destroy();
  // A signed ticket is not enough: its issuer must still reach the box, and control be theirs.
  let access: ViewerAccess = await viewerAccess(claims, owner, mode);
  if (!access.ok) return refuse(socket, access.err);
  const vnc = await connectVnc(box.address, vncPort(screen));
  // Checked again if access changed or someone took the screen while VNC connected; from the
  // last check to registering (in relay) nothing awaits, so the revocation listener misses none.
  while (access.ok && !stillCurrent(access, claims, mode)) access = await viewerAccess(claims, owner, mode);
  if (!access.ok) {
    vnc.tcp.destroy();
    return refuse(socket, access.err);
  }
  const granted = access;
  const early = client.take();
  if (socket.destroyed || client.left.aborted) {
    vnc.tcp.destroy();
    socket.destroy();
    return;
  }
  const login = startVncLogin(vnc, box.id);
  // A handshake ws refuses for another reason (a malformed subprotocol) ends the VNC connection
  // with the client's: it once stayed open, an x11vnc client past every viewer limit.
  const dropVnc = () => vnc.tcp.destroy();
  socket.once("close", dropVnc);
  wss!.handleUpgrade(req, socket, early.length ? Buffer.concat([head, ...early]) : head, (ws) => {
    socket.off("close", dropVnc);
    ws.once("close", countSocket(mode === "control" ? "control" : "viewer"));
    relay(ws, vnc, login, claims, mode, granted);
  });
}
