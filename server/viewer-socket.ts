import type { IncomingMessage } from "node:http";
import { STATUS_CODES } from "node:http";
import net from "node:net";
import type { Duplex } from "node:stream";
import { WebSocket, WebSocketServer } from "ws";
import { vncPassword } from "~/models/agent.server";
import { type RunningBox, getBox, requireRunningBox, touchBox } from "~/models/box.server";
import { type TicketClaims, type ViewerMode, verifyTicket } from "~/models/ticket.server";
import { registerViewer, reportViewerInput } from "~/models/viewer.server";
import { vncPort } from "~/protocol/agent";
import { VIEWER_CLOSE, VIEWER_SOCKET_PATH } from "~/protocol/viewer-socket";
import { ApiError, ERROR_STATUS, isApiError, notFound } from "~/utils/api-error.server";
import type { Actor } from "~/models/actor";
import { vncChallengeResponse } from "~/utils/vnc-auth.server";
import { RFB_CLOSE, RfbClientFilter } from "./rfb-filter";
import { registerUpgrade } from "./upgrade-router";
import { type ViewerAccess, stillCurrent, viewerAccess } from "./viewer-access";
import { ByteReader, ViewerGreetingError, greetViewer, loginToVnc } from "./vnc-handshake";

// GET /v1/boxes/{id}/screens/{screen}/viewer/socket?ticket=…&mode=view|control
//
// A raw WebSocket to the screen's VNC server (x11vnc on ADDRESS:5900+screen), for noVNC. The
// ticket is the credential (no bearer token); it is checked, with the box, before the upgrade is
// accepted, and a refusal is a plain HTTP answer. Every viewer gets its own VNC connection, so a
// slow one never holds up the others or the agent. The relay logs in to x11vnc with the box's
// VNC password (which viewers never see) while it greets the viewer with security type None
// (server/vnc-handshake.ts); from ClientInit on, VNC → viewer bytes go out unchanged as binary
// frames and viewer → VNC bytes go through the RFB filter (view mode drops input, both modes
// force the shared flag).
//
// Back-pressure towards the viewer is NOT done by pausing the VNC socket: x11vnc is one thread
// and blocks writing to a connection whose reader stopped, which freezes every other viewer of
// the screen (measured: a viewer that stops reading stalled another for > 5 s). Instead the
// relay always reads VNC, and holds the viewer's FramebufferUpdateRequests (merged into one)
// while the viewer is behind, so x11vnc only produces what the viewer can take; a viewer that
// still piles up more than HARD_LIMIT (it ignores flow control) is closed with 4408.

const SERVER: Actor = { kind: "server" };
/** Hold the viewer's update requests while this much is queued for it; release below LOW_WATER. */
const HIGH_WATER = 4 * 1024 * 1024;
const LOW_WATER = 1024 * 1024;
/**
 * One update request at a time reaches x11vnc from a viewer: a later one is held until VNC has
 * answered and gone quiet for QUIET_MS (the update is through). x11vnc (one thread) stalls
 * every client for seconds when it has several full updates to write to one connection at once.
 */
const MAX_UNANSWERED = 1;
const QUIET_MS = 3;
/** A held request is sent on after this long even without an answer (a still screen answers nothing). */
const RELEASE_MS = 50;
/** Queued for a viewer beyond this, it is closed: it sends requests faster than it reads. */
const HARD_LIMIT = 64 * 1024 * 1024;
const CONNECT_TIMEOUT_MS = 5000;
/** Reads from VNC of up to this much: full updates are megabytes, and fewer, larger frames cost less. */
const READ_SIZE = 256 * 1024;
const PING_MS = 30_000;
/** How long an upgrade on a paused box waits (not yet accepted) for it to resume; then 504 `timeout`. */
export const PAUSED_SOCKET_WAIT_MS = 60_000;
/** Viewer bytes held while the login to VNC finishes (ClientInit and a few messages at most). */
const HELD_MAX = 1024 * 1024;

let wss: WebSocketServer | undefined;

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
      console.error("[holm] viewer socket:", err);
      refuse(socket, new ApiError("internal", "the viewer socket failed to open"));
    });
  });
}

/**
 * Answers a refused upgrade with plain HTTP: the seed's status for the code (ERROR_STATUS), and
 * the error body, like every /v1 answer.
 */
function refuse(socket: Duplex, err: ApiError) {
  if (socket.destroyed) return;
  const status = ERROR_STATUS[err.code];
  const body = JSON.stringify(err.toJSON());
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}\r\nconnection: close\r\n` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
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
  const keep = (chunk: Buffer) => early.push(chunk);
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
  const { tcp, onData } = connectVnc(box.address, vncPort(screen));
  const reached = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => {
      tcp.destroy();
      resolve(false);
    }, CONNECT_TIMEOUT_MS);
    tcp.once("connect", () => {
      clearTimeout(timer);
      resolve(true);
    });
    tcp.once("error", () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
  // Checked again if access changed or someone took the screen while VNC connected; from the
  // last check to registering (in relay) nothing awaits, so the revocation listener misses none.
  while (access.ok && !stillCurrent(access, claims, mode)) access = await viewerAccess(claims, owner, mode);
  if (!access.ok) {
    tcp.destroy();
    return refuse(socket, access.err);
  }
  const granted = access;
  const early = client.take();
  if (socket.destroyed || client.left.aborted) {
    tcp.destroy();
    socket.destroy();
    return;
  }
  // The login runs while the viewer upgrades and is greeted.
  const password = vncPassword(box.id);
  const login = reached
    ? loginToVnc(tcp, onData, (challenge) => vncChallengeResponse(password, challenge), CONNECT_TIMEOUT_MS)
    : undefined;
  // Awaited once the viewer is greeted; a failure before that is not an unhandled rejection.
  login?.catch(() => undefined);
  wss!.handleUpgrade(req, socket, early.length ? Buffer.concat([head, ...early]) : head, (ws) => {
    if (!login) {
      tcp.destroy();
      ws.close(VIEWER_CLOSE.vncUnreachable, `the VNC server of box ${id} screen ${screen} does not answer`);
      return;
    }
    relay(ws, tcp, onData, claims, mode, granted, login);
  });
}

/**
 * A TCP connection to VNC that reads into large buffers (a big read is handed on as it is, a
 * small one copied out so the buffer is reused). Bytes that arrive before `onData` is given wait.
 */
function connectVnc(host: string, port: number) {
  let buf = Buffer.allocUnsafe(READ_SIZE);
  const early: Buffer[] = [];
  let sink: ((chunk: Buffer) => void) | undefined;
  const tcp = net.connect({
    host,
    port,
    noDelay: true,
    onread: {
      buffer: () => buf,
      callback: (n: number) => {
        let chunk: Buffer;
        if (n >= READ_SIZE / 2) {
          chunk = buf.subarray(0, n);
          buf = Buffer.allocUnsafe(READ_SIZE);
        } else {
          chunk = Buffer.from(buf.subarray(0, n));
        }
        if (sink) sink(chunk);
        else early.push(chunk);
        return true;
      },
    },
  });
  const onData = (fn: (chunk: Buffer) => void) => {
    sink = fn;
    for (const c of early.splice(0)) fn(c);
  };
  return { tcp, onData };
}

function relay(
  ws: WebSocket,
  tcp: net.Socket,
  onData: (fn: (chunk: Buffer) => void) => void,
  claims: TicketClaims,
  mode: ViewerMode,
  access: { owner: string | null; sessionId?: string; untilMs?: number },
  login: Promise<Buffer>,
) {
  const { box_id: boxId, screen, issuer } = claims;
  let ended = false;
  let wsPaused = false;
  let alive = true;
  /** Update requests sent on since VNC last sent anything. */
  let unanswered = 0;
  /** When VNC last sent bytes, and since when requests are held. */
  let lastDataAt = 0;
  let heldSince = 0;
  let releaseTimer: NodeJS.Timeout | undefined;
  /** The viewer's bytes until it is greeted (server/vnc-handshake.ts). */
  const greeting = new ByteReader();

  const filter = new RfbClientFilter({
    mode,
    greeted: true,
    onInput:
      mode === "control"
        ? (kind, detail) => {
            reportViewerInput({ boxId, screen, issuer, kind, detail: detail as Record<string, number> });
            void touchBox(boxId).catch(() => undefined);
          }
        : undefined,
    holdUpdates: () => {
      const quiet = performance.now() - lastDataAt >= QUIET_MS;
      if (filter.holding || !quiet || ws.bufferedAmount > HIGH_WATER || unanswered >= MAX_UNANSWERED) {
        if (!filter.holding) heldSince = performance.now();
        armRelease();
        return true;
      }
      unanswered++;
      return false;
    },
  });

  /**
   * Sends the held update requests on (merged into one) once VNC is quiet and the viewer has
   * caught up, and either the last request was answered or RELEASE_MS have passed.
   */
  const release = () => {
    if (ended || !filter.holding || ws.bufferedAmount > LOW_WATER) return;
    const t = performance.now();
    if (t - lastDataAt < QUIET_MS) return;
    if (unanswered >= MAX_UNANSWERED && t - heldSince < RELEASE_MS) return;
    const msg = filter.release();
    if (!msg) return;
    unanswered++;
    tcp.write(msg);
  };
  function armRelease() {
    releaseTimer ??= setTimeout(() => {
      releaseTimer = undefined;
      release();
      if (filter.holding && !ended) armRelease();
    }, QUIET_MS);
  }

  const end = (code: number, reason: string) => {
    if (ended) return;
    ended = true;
    greeting.fail(new Error("the viewer socket closed"));
    unregister();
    clearInterval(ping);
    clearTimeout(releaseTimer);
    tcp.destroy();
    if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close(code, reason);
  };

  const unregister = registerViewer({
    boxId,
    screen,
    mode,
    issuer,
    owner: access.owner,
    sessionId: access.sessionId,
    untilMs: access.untilMs,
    openedAtMs: Date.now(),
    close: (code, reason) => end(code, reason),
  });

  // VNC → viewer, unchanged, always read (see the top of the file); from ServerInit on.
  const sent = (err?: Error) => {
    if (!err) release();
  };
  const fromVnc = (chunk: Buffer) => {
    if (ended) return;
    unanswered = 0;
    lastDataAt = performance.now();
    ws.send(chunk, { binary: true }, sent);
    if (ws.bufferedAmount > HARD_LIMIT) end(VIEWER_CLOSE.tooSlow, "the viewer does not keep up with the updates it asks for");
  };
  tcp.on("error", () => undefined);
  tcp.on("close", () => {
    if (ended) return;
    void whyVncClosed(boxId).then(([code, reason]) => end(code, reason));
  });

  // viewer → VNC, through the filter. Back-pressure: stop reading the viewer while VNC is behind.
  const toVnc = (bytes: Buffer) => {
    const { out, close } = filter.push(bytes);
    if (out.length && !tcp.write(out) && !wsPaused) {
      wsPaused = true;
      ws.pause();
      tcp.once("drain", () => {
        wsPaused = false;
        ws.resume();
      });
    }
    if (close) end(close.code, close.reason);
    else release();
  };

  // Until both handshakes are done, viewer bytes go to the greeting, then wait for the login.
  let held: Buffer[] | undefined = [];
  let heldBytes = 0;
  let greeted = false;
  ws.on("message", (data: Buffer | ArrayBuffer | Buffer[]) => {
    if (ended) return;
    const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    if (!greeted) return greeting.push(bytes);
    if (held) {
      held.push(bytes);
      heldBytes += bytes.length;
      if (heldBytes > HELD_MAX) end(RFB_CLOSE.protocol, "the viewer sent too much before the session began");
      return;
    }
    toVnc(bytes);
  });
  void (async () => {
    try {
      await greetViewer((n) => greeting.read(n), (b) => ws.send(b, { binary: true }));
    } catch (e) {
      const kind = e instanceof ViewerGreetingError ? e.kind : "protocol";
      return end(RFB_CLOSE[kind], (e as Error).message.slice(0, 120));
    }
    greeted = true;
    held!.unshift(greeting.rest());
    let early: Buffer;
    try {
      early = await login;
    } catch (e) {
      console.error(`[holm] VNC login to ${boxId} screen ${screen} failed:`, (e as Error).message);
      return end(VIEWER_CLOSE.vncUnreachable, "the box's VNC server did not take the server's login");
    }
    if (ended) return;
    onData(fromVnc);
    if (early.length) fromVnc(early);
    const pending = Buffer.concat(held!);
    held = undefined;
    if (pending.length) toVnc(pending);
  })();
  ws.on("pong", () => (alive = true));
  ws.on("error", () => end(VIEWER_CLOSE.normal, "socket error"));
  ws.on("close", () => end(VIEWER_CLOSE.normal, "viewer closed"));

  // A viewer that vanished without closing (sleep, network loss) is noticed within a minute.
  const ping = setInterval(() => {
    if (!alive) {
      ws.terminate();
      return;
    }
    alive = false;
    ws.ping();
  }, PING_MS);
  ping.unref();
}

/** When VNC hangs up: was the box removed or stopped (the usual reason), or did VNC alone go? */
async function whyVncClosed(boxId: string): Promise<[number, string]> {
  try {
    const box = await getBox(SERVER, boxId);
    if (box.state === "ready") return [VIEWER_CLOSE.vncUnreachable, "the box's VNC server closed the connection"];
    return [VIEWER_CLOSE.notReady, `the box is ${box.state}`];
  } catch {
    return [VIEWER_CLOSE.noBox, "the box was removed"];
  }
}
