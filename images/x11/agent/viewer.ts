// Direct viewer sockets (spec.policy.auth `token` or `password`; app/protocol/direct-viewer.ts):
// a WebSocket on its own port (published on the host, never the agent's port), one per viewer,
// piped to the screen's x11vnc through the same RFB filter as the server's relay
// (app/protocol/rfb/pipe.ts). What the server enforces on its relay holds here too:
//   - token: a ticket the server signed with this box's secret, for this box and screen, not
//     expired; `control` only with a control ticket, and only while no one else holds the screen
//     (the input guard the server raises names who holds it; raising it closes the others'
//     control sockets); a socket closes when its ticket expires.
//   - password: VNC authentication with the box's viewer password; it names no person, so it
//     opens watching only.
// The agent logs in to x11vnc with the password in x11vnc's own file; viewers never see it.
import fs from "node:fs";
import http from "node:http";
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { Duplex } from "node:stream";
import { WebSocket, WebSocketServer } from "ws";
import { VNC_PASSWD_PATH } from "../../../app/protocol/agent";
import { DIRECT_TICKET_TTL_MS, type DirectInput, type DirectInputs, directViewerPassword, mayDriveHeld, openDirectTicket } from "../../../app/protocol/direct-viewer";
import { ByteReader, ViewerGreetingError, greetViewerWithPassword, loginToVnc } from "../../../app/protocol/rfb/handshake";
import { CONNECT_TIMEOUT_MS, connectVnc, pipeViewer } from "../../../app/protocol/rfb/pipe";
import { passwordOfVncPasswdFile, vncChallengeResponse } from "../../../app/protocol/rfb/vnc-auth";
import { VIEWER_CLOSE } from "../../../app/protocol/viewer-socket";
import { refuseUpgrade } from "./cdp-proxy";
import type { AgentConfig } from "./config";
import type { Screen } from "./screen";

/** Input kept for the server at most: it takes it every few seconds. */
const MAX_INPUTS = 2000;
/**
 * Direct sockets a screen takes, as the server's relay takes HOLM_VIEWERS_PER_SCREEN (64): each
 * is an x11vnc client, served one after the other, so one ticket reused a thousand times would
 * slow every viewer's frames. One ticket issuer may hold half; password sockets name no one, so
 * only the screen's bound holds for them, counted once the password was given.
 */
const PER_SCREEN = 64;

interface Conn {
  screen: number;
  mode: "view" | "control";
  issuer: string;
  close: (code: number, reason: string) => void;
}

export class DirectViewers {
  private readonly conns = new Set<Conn>();
  /**
   * Issuers whose access ended (the server said so), by `issuer` or `issuer control`: when. A
   * ticket signed before then is refused; kept a ticket's lifetime, after which none is left.
   */
  private readonly endedAt = new Map<string, number>();
  /** Input on control sockets, until the server takes it for the trace (POST /viewers/inputs). */
  private inputs: DirectInput[] = [];
  private dropped = 0;
  /** Sockets open or opening, by screen and by screen and issuer. */
  private readonly held = new Map<string, number>();
  /** Which viewer password opens a password socket (the server raises it when someone given it loses access). */
  private passwordEpoch = 0;

  /** The input since the last call, for the server's trace. */
  takeInputs(): DirectInputs {
    const out = { inputs: this.inputs, dropped: this.dropped };
    this.inputs = [];
    this.dropped = 0;
    return out;
  }
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });

  constructor(
    private readonly screens: Screen[],
    private readonly config: AgentConfig,
  ) {}

  /** Open direct sockets, for /health and tests. */
  get count(): number {
    return this.conns.size;
  }

  /**
   * Takes a place for a socket of `issuer` on screen `screen` until `socket` closes, or says why
   * there is none (503, retryable once one closes).
   */
  private reserve(screen: number, issuer: string, socket: Duplex): string | undefined {
    const keys = issuer === "password" ? [`${screen}`] : [`${screen}`, `${screen} ${issuer}`];
    const onScreen = this.held.get(keys[0]) ?? 0;
    const mine = this.held.get(keys[1] ?? "") ?? 0;
    if (onScreen >= PER_SCREEN) return `screen ${screen} has ${onScreen} viewers, the most it takes; close one and try again`;
    if (keys[1] && mine >= PER_SCREEN / 2) return `this issuer already has ${mine} viewers of screen ${screen}, the most one issuer may have; close one and try again`;
    for (const k of keys) this.held.set(k, (this.held.get(k) ?? 0) + 1);
    socket.once("close", () => {
      for (const k of keys) {
        const n = (this.held.get(k) ?? 1) - 1;
        if (n > 0) this.held.set(k, n);
        else this.held.delete(k);
      }
    });
    return undefined;
  }

  /** Who may drive screen n now: anyone, unless the guard is up (a person holds it). */
  private mayDrive(s: Screen, issuer: string): boolean {
    if (Date.now() >= s.guardedUntil) return true;
    return mayDriveHeld({ by: s.guardedBy, exclusive: true }, issuer);
  }

  /** The open direct sockets: screen, mode and issuer (the server rechecks them when access changes). */
  list(): { screen: number; mode: "view" | "control"; issuer: string }[] {
    return [...this.conns].map(({ screen, mode, issuer }) => ({ screen, mode, issuer }));
  }

  /**
   * Closes `issuer`'s sockets (the server found its access gone: a key revoked, a member removed):
   * all of them with 4401, or with `controlOnly` (the role no longer drives) its control sockets with 4403.
   */
  closeIssuer(issuer: string, controlOnly: boolean, reason: string): number {
    const now = Date.now();
    for (const [k, at] of this.endedAt) if (now - at > DIRECT_TICKET_TTL_MS + 60_000) this.endedAt.delete(k);
    this.endedAt.set(controlOnly ? `${issuer} control` : issuer, now);
    let n = 0;
    for (const c of this.conns) {
      if (c.issuer !== issuer || (controlOnly && c.mode !== "control")) continue;
      c.close(controlOnly ? VIEWER_CLOSE.denied : VIEWER_CLOSE.badTicket, reason.slice(0, 120));
      n++;
    }
    return n;
  }

  /**
   * The server changed the box's viewer password (someone given it lost access; epochs only
   * rise, and the agent starts at 0, told the current one when it runs again): the old one
   * opens nothing from now on, and the sockets it opened close (4401); viewers ask for the new one.
   */
  setPasswordEpoch(epoch: number): { epoch: number; closed: number } {
    // Only up: two servers telling the box of one change may be heard in either order.
    if (epoch <= this.passwordEpoch) return { epoch: this.passwordEpoch, closed: 0 };
    this.passwordEpoch = epoch;
    let closed = 0;
    for (const c of this.conns) {
      if (c.issuer !== "password") continue;
      c.close(VIEWER_CLOSE.badTicket, "the box's viewer password changed; ask the server for the new one");
      closed++;
    }
    return { epoch, closed };
  }

  /** The guard went up on `s`: control sockets of anyone who may not drive now close. */
  guardRaised(s: Screen): void {
    for (const c of this.conns) {
      if (c.screen === s.index && c.mode === "control" && !this.mayDrive(s, c.issuer)) {
        c.close(VIEWER_CLOSE.denied, "a person took control of this screen");
      }
    }
  }

  serve(): http.Server {
    const server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(426, { "content-type": "application/json", connection: "close" });
      res.end(JSON.stringify({ code: "bad_request", message: "this port serves viewer WebSockets only" }));
    });
    server.on("upgrade", (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on("error", () => undefined);
      try {
        this.upgrade(req, socket, head);
      } catch (err) {
        refuseUpgrade(socket, 500, String((err as Error)?.message ?? err).slice(0, 200));
      }
    });
    server.headersTimeout = 10_000;
    server.requestTimeout = 10_000;
    return server;
  }

  private upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? "/", "http://box");
    const m = /^\/screens\/(\d{1,2})\/viewer$/.exec(url.pathname);
    if (!m) return refuseUpgrade(socket, 404, `no viewer socket at ${url.pathname.slice(0, 100)}`);
    const s = this.screens[Number(m[1])];
    if (!s) return refuseUpgrade(socket, 404, `no screen ${m[1]}; this box has ${this.screens.length}`);
    const asked = url.searchParams.get("mode") ?? "view";
    if (asked !== "view" && asked !== "control") return refuseUpgrade(socket, 400, "mode is view or control");
    const secret = this.config.secret();
    let issuer = "password";
    let untilMs = Infinity;
    if (this.config.viewerAuth === "token") {
      const claims = openDirectTicket(secret, url.searchParams.get("ticket"), this.config.boxId);
      if (typeof claims === "string") return refuseUpgrade(socket, 401, claims);
      if (claims.issued_at_ms <= (this.endedAt.get(claims.issuer) ?? -1)) return refuseUpgrade(socket, 401, "the ticket's issuer no longer has access");
      if (claims.screen !== s.index) return refuseUpgrade(socket, 409, `the ticket is for screen ${claims.screen}, not ${s.index}`);
      if (asked === "control" && claims.mode !== "control") return refuseUpgrade(socket, 409, "the ticket allows watching only, not control");
      if (asked === "control" && claims.issued_at_ms <= (this.endedAt.get(`${claims.issuer} control`) ?? -1)) {
        return refuseUpgrade(socket, 409, "the ticket's issuer may no longer control this screen");
      }
      if (asked === "control" && !this.mayDrive(s, claims.issuer)) {
        return refuseUpgrade(socket, 409, `a person has control of screen ${s.index}; you may watch, and control once it is given back`);
      }
      issuer = claims.issuer;
      untilMs = claims.expires_at_ms;
      const full = this.reserve(s.index, issuer, socket);
      if (full) return refuseUpgrade(socket, 503, full);
    } else {
      if (!secret) return refuseUpgrade(socket, 503, "the box has no secret yet");
      if (asked === "control") {
        return refuseUpgrade(socket, 409, "a viewer password opens watching only: it names no person, so it cannot honour a takeover");
      }
      // The password before anything else: no VNC connection for a viewer that has not given it.
      const epoch = this.passwordEpoch;
      const password = directViewerPassword(secret, epoch);
      return this.wss.handleUpgrade(req, socket, head, (ws) => {
        void passwordFirst(ws, password).then((take) => {
          if (!take) return;
          const full = this.reserve(s.index, "password", socket);
          if (full) return ws.close(VIEWER_CLOSE.unavailable, full.slice(0, 120));
          this.connectAndPipe(s, "view", "password", Infinity, undefined, { ws, take, epoch });
        });
      });
    }
    this.connectAndPipe(s, asked, issuer, untilMs, { req, socket, head });
  }

  /**
   * Connects to the screen's VNC and pipes the viewer to it: one still to upgrade (VNC first,
   * then the upgrade, so a viewer that goes away meanwhile leaves no VNC connection behind), or
   * one upgraded and greeted already (a password socket).
   */
  private connectAndPipe(
    s: Screen,
    mode: "view" | "control",
    issuer: string,
    untilMs: number,
    upgrade?: { req: http.IncomingMessage; socket: Duplex; head: Buffer },
    greeted?: { ws: WebSocket; take: () => Buffer; epoch: number },
  ): void {
    const greet: Parameters<typeof pipeViewer>[3]["greet"] = greeted ? async () => undefined : undefined;
    void (async () => {
      const vnc = await connectVnc("127.0.0.1", this.config.vncPortBase + s.index);
      let piped = false;
      const gone = () => (upgrade ? upgrade.socket.destroyed : greeted!.ws.readyState !== WebSocket.OPEN);
      if (upgrade) upgrade.socket.once("close", () => piped || vnc.tcp.destroy());
      else greeted!.ws.once("close", () => piped || vnc.tcp.destroy());
      if (gone()) return vnc.tcp.destroy();
      let password: string;
      try {
        password = vncPassword();
      } catch (err) {
        vnc.tcp.destroy();
        const why = `the box's VNC password is not readable yet: ${String((err as Error)?.message ?? err).slice(0, 60)}`;
        return upgrade ? refuseUpgrade(upgrade.socket, 503, why) : greeted!.ws.close(VIEWER_CLOSE.vncUnreachable, why);
      }
      const login = vnc.reached ? loginToVnc(vnc.tcp, vnc.onData, (c) => vncChallengeResponse(password, c), CONNECT_TIMEOUT_MS) : undefined;
      login?.catch(() => undefined);
      const pipe = (ws: WebSocket) => {
        piped = true;
        pipeViewer(ws, vnc, login, {
          mode,
          label: `screen ${s.index}`,
          greet,
          // What a greeted viewer sent meanwhile (its ClientInit), taken as the pipe starts listening.
          early: greeted?.take(),
          onInput: (kind, detail) => {
            if (this.inputs.length >= MAX_INPUTS) {
              this.inputs.shift();
              this.dropped++;
            }
            this.inputs.push({ screen: s.index, issuer, kind, detail: detail as Record<string, number>, at_ms: Date.now() });
          },
          register: (close) => {
            const conn: Conn = { screen: s.index, mode, issuer, close };
            this.conns.add(conn);
            // The guard may have gone up while VNC was being reached; the password may have changed
            // since this viewer gave it.
            if (greeted && greeted.epoch !== this.passwordEpoch) {
              queueMicrotask(() => close(VIEWER_CLOSE.badTicket, "the box's viewer password changed; ask the server for the new one"));
            }
            if (mode === "control" && !this.mayDrive(s, issuer)) queueMicrotask(() => close(VIEWER_CLOSE.denied, "a person took control of this screen"));
            // A ticket opens a socket for as long as it is valid: past that, ask the server again.
            const timer = Number.isFinite(untilMs)
              ? setTimeout(() => close(VIEWER_CLOSE.badTicket, "the ticket expired; ask the server for a new one"), Math.max(0, untilMs - Date.now()))
              : undefined;
            return () => {
              clearTimeout(timer);
              this.conns.delete(conn);
            };
          },
          whyVncClosed: async () => [VIEWER_CLOSE.vncUnreachable, "the screen's VNC server closed the connection"],
          onLoginError: (err) => process.stderr.write(`holm-agent: direct viewer login to x11vnc failed: ${String(err)}\n`),
        });
      };
      if (greeted) pipe(greeted.ws);
      else this.wss.handleUpgrade(upgrade!.req, upgrade!.socket, upgrade!.head, pipe);
    })();
  }
}

/** How long a password socket's viewer has to give the password. */
const PASSWORD_GREETING_MS = 10_000;

/**
 * Greets a password socket's viewer and checks its password (VNC authentication, in constant
 * time) before any VNC connection is made for it: an unauthenticated client costs x11vnc nothing
 * (before, each socket had the agent open and log in to an x11vnc connection at once, kept for
 * as long as the socket stayed), and one that never answers is closed. Resolves, once the password
 * is right, with what takes the bytes the viewer sent past its answer (it stops listening: the
 * pipe listens from then on), or undefined when the socket was closed.
 */
async function passwordFirst(ws: WebSocket, password: string): Promise<(() => Buffer) | undefined> {
  const reader = new ByteReader();
  const onMessage = (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => {
    // Text frames are the heartbeat (app/protocol/viewer-socket.ts), never RFB.
    if (isBinary) reader.push(Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data));
  };
  const onClose = () => reader.fail(new Error("the viewer left"));
  ws.on("message", onMessage);
  ws.on("close", onClose);
  ws.on("error", () => undefined);
  const timer = setTimeout(
    () => reader.fail(new ViewerGreetingError("the viewer did not give the password in time", "protocol")),
    PASSWORD_GREETING_MS,
  );
  const challenge = randomBytes(16);
  const expected = vncChallengeResponse(password, challenge);
  const stop = () => {
    clearTimeout(timer);
    ws.off("message", onMessage);
    ws.off("close", onClose);
  };
  try {
    await greetViewerWithPassword(
      (n) => reader.read(n),
      (b) => ws.send(b, { binary: true }),
      challenge,
      (r) => r.length === 16 && timingSafeEqual(r, expected),
    );
  } catch (e) {
    stop();
    const kind = e instanceof ViewerGreetingError ? e.kind : "protocol";
    const code = kind === "password" ? VIEWER_CLOSE.badTicket : kind === "unsupported" ? VIEWER_CLOSE.unsupported : VIEWER_CLOSE.protocol;
    if (ws.readyState === WebSocket.OPEN) ws.close(code, (e as Error).message.slice(0, 120));
    return undefined;
  }
  clearTimeout(timer);
  return () => {
    stop();
    return reader.rest();
  };
}

/** The password x11vnc asks for, read from the file the server wrote for it as the box booted. */
function vncPassword(): string {
  return passwordOfVncPasswdFile(fs.readFileSync(process.env.HOLM_VNC_PASSWD_FILE || VNC_PASSWD_PATH));
}
