import net from "node:net";
import { WebSocket } from "ws";
import { VIEWER_CLOSE, VIEWER_HEARTBEAT } from "../viewer-socket";
import { RFB_CLOSE, type RfbInput, type RfbMode, RfbClientFilter } from "./filter";
import { ByteReader, ViewerGreetingError, greetViewer } from "./handshake";

// The byte pipe between one viewer's WebSocket and one VNC connection, shared by the server's
// relay (server/viewer-relay.ts) and the box's direct viewer socket (images/x11/agent/viewer.ts),
// so both enforce the same thing the same way. The caller has already authenticated the viewer
// and started the login to x11vnc with the box's VNC password (which viewers never see); this
// greets the viewer with security type None, and from ClientInit on VNC → viewer bytes go out
// unchanged as binary frames and viewer → VNC bytes go through the RFB filter (view mode drops
// input, both modes force the shared flag).
//
// Back-pressure towards the viewer is NOT done by pausing the VNC socket: x11vnc is one thread
// and blocks writing to a connection whose reader stopped, which freezes every other viewer of
// the screen (measured: a viewer that stops reading stalled another for > 5 s). Instead the
// pipe always reads VNC, and holds the viewer's FramebufferUpdateRequests (merged into one)
// while the viewer is behind, so x11vnc only produces what the viewer can take; a viewer that
// still piles up more than HARD_LIMIT (it ignores flow control) is closed with 4408.
//
// Liveness: WebSocket pings catch a viewer whose connection vanished; they cannot catch a page
// that is frozen (the browser answers them), so a viewer that asks for the heartbeat of
// protocol/viewer-socket.ts (the console does) is closed once its page stops answering.

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
export const CONNECT_TIMEOUT_MS = 10_000;
/** Reads from VNC of up to this much: full updates are megabytes, and fewer, larger frames cost less. */
const READ_SIZE = 256 * 1024;
/** Read buffers kept for reuse per connection (a full 1280×800 raw update is 16 of them). */
const FREE_BUFFERS = 32;
const PING_MS = 30_000;
/** Viewer bytes held while the login to VNC finishes (ClientInit and a few messages at most). */
const HELD_MAX = 1024 * 1024;

/** A TCP connection to a screen's VNC server; `reached` says whether it answered in time. */
export interface VncLink {
  tcp: net.Socket;
  onData: (fn: (chunk: Buffer) => void) => void;
  /** Gives a chunk from onData back for reading into, once it has been written on. */
  recycle: (chunk: Buffer) => void;
  reached: boolean;
}

/** Connects to VNC, waiting up to CONNECT_TIMEOUT_MS for it to answer. */
export async function connectVnc(host: string, port: number): Promise<VncLink> {
  const { tcp, onData, recycle } = openVnc(host, port);
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
  return { tcp, onData, recycle, reached };
}

/**
 * A TCP connection to VNC that reads into large buffers: a big read is handed on as it is (no
 * copy), a small one copied out so the buffer is used again. A big read's buffer comes back
 * through `recycle` once the viewer's socket has taken it, so a stream of full updates reads into
 * the same few buffers instead of a fresh 256 KiB one per read (garbage collection was the
 * largest item in the server's profile during the viewer bench). Bytes before `onData` wait.
 */
function openVnc(host: string, port: number) {
  const free: ArrayBuffer[] = [];
  /** Buffers handed on whole and not given back yet. */
  const out = new Set<ArrayBufferLike>();
  const fresh = () => {
    const ab = free.pop();
    return ab ? Buffer.from(ab) : Buffer.allocUnsafeSlow(READ_SIZE);
  };
  let buf = fresh();
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
          out.add(buf.buffer);
          buf = fresh();
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
  /** Gives a chunk's buffer back once nothing holds the chunk (its bytes were written on). */
  const recycle = (chunk: Buffer) => {
    if (chunk.byteOffset !== 0 || !out.delete(chunk.buffer) || free.length >= FREE_BUFFERS) return;
    free.push(chunk.buffer as ArrayBuffer);
  };
  return { tcp, onData, recycle };
}

export interface PipeOptions {
  mode: RfbMode;
  /** Names the screen in close reasons ("box box_… screen 0"). */
  label: string;
  /** Control mode: coarse input activity (never key values), as the RFB filter reports it. */
  onInput?: (kind: RfbInput["kind"], detail: RfbInput["detail"]) => void;
  /** Called once the pipe runs, with a way to close it; returns what undoes the registration. */
  register: (close: (code: number, reason: string) => void) => () => void;
  /** Why VNC hung up: the close code and reason the viewer gets. */
  whyVncClosed: () => Promise<[number, string]>;
  onLoginError?: (err: unknown) => void;
  /** Once, when the pipe ends: the close code and reason the viewer was given, and how long it ran. */
  onEnd?: (code: number, reason: string, ms: number) => void;
  /** Greets the viewer up to its ClientInit; default: security type None (the caller authenticated it). */
  greet?: (read: (n: number) => Promise<Buffer>, write: (b: Buffer) => void) => Promise<void>;
  /** Bytes the viewer sent before the pipe began (the caller greeted it): read first. */
  early?: Buffer;
}

/**
 * Relays an accepted viewer socket to VNC until either side ends. `login` is the login to VNC
 * started when the socket was accepted (none when VNC was not reached).
 */
export function pipeViewer(ws: WebSocket, vnc: VncLink, login: Promise<Buffer> | undefined, opts: PipeOptions) {
  const { tcp, onData, recycle } = vnc;
  const { mode } = opts;
  if (!login) {
    tcp.destroy();
    ws.close(VIEWER_CLOSE.vncUnreachable, `the VNC server of ${opts.label} does not answer`);
    return;
  }
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
  if (opts.early?.length) greeting.push(opts.early);

  const filter = new RfbClientFilter({
    mode,
    greeted: true,
    onInput: mode === "control" ? opts.onInput : undefined,
    holdUpdates: () => {
      // A viewer that has taken every byte sent to it (nothing queued here) and has no request
      // outstanding asks because it has the last update whole: it goes on at once. Holding it
      // for QUIET_MS (and a timer's lateness) delayed every update of a viewer that asks as each
      // one lands (noVNC, the bench). While the viewer is behind, VNC must also have gone quiet.
      const caughtUp = ws.bufferedAmount === 0 && unanswered === 0;
      const quiet = caughtUp || performance.now() - lastDataAt >= QUIET_MS;
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

  /** The heartbeat (asked for by the viewer's first text frame): when it last answered. */
  let heardAt = 0;
  let beat: NodeJS.Timeout | undefined;
  const heartbeat = () => {
    if (Date.now() - heardAt > VIEWER_HEARTBEAT.closeAfterMs) {
      end(VIEWER_CLOSE.unresponsive, "the viewer stopped answering the heartbeat");
      ws.terminate();
      return;
    }
    if (ws.readyState === WebSocket.OPEN) ws.send(VIEWER_HEARTBEAT.text, { binary: false });
  };

  const startedAt = performance.now();
  const end = (code: number, reason: string) => {
    if (ended) return;
    ended = true;
    greeting.fail(new Error("the viewer socket closed"));
    unregister();
    clearInterval(ping);
    clearInterval(beat);
    clearTimeout(releaseTimer);
    tcp.destroy();
    if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close(code, reason);
    opts.onEnd?.(code, reason, performance.now() - startedAt);
  };

  const unregister = opts.register((code, reason) => end(code, reason));

  // VNC → viewer, unchanged, always read (see the top of the file); from ServerInit on.
  const fromVnc = (chunk: Buffer) => {
    if (ended) return;
    unanswered = 0;
    lastDataAt = performance.now();
    // The chunk goes out as one binary frame, as it is; once written, its buffer is read into again.
    ws.send(chunk, { binary: true }, (err) => {
      recycle(chunk);
      if (!err) release();
    });
    if (ws.bufferedAmount > HARD_LIMIT) end(VIEWER_CLOSE.tooSlow, "the viewer does not keep up with the updates it asks for");
  };
  tcp.on("error", () => undefined);
  tcp.on("close", () => {
    if (ended) return;
    void opts.whyVncClosed().then(([code, reason]) => end(code, reason));
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
  ws.on("message", (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => {
    if (ended) return;
    // Text frames are the heartbeat, never RFB.
    if (!isBinary) {
      heardAt = Date.now();
      if (!beat) beat = setInterval(heartbeat, VIEWER_HEARTBEAT.everyMs).unref();
      return;
    }
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
      await (opts.greet ?? greetViewer)((n) => greeting.read(n), (b) => ws.send(b, { binary: true }));
    } catch (e) {
      const kind = e instanceof ViewerGreetingError ? e.kind : "protocol";
      const code = kind === "password" ? VIEWER_CLOSE.badTicket : RFB_CLOSE[kind];
      return end(code, (e as Error).message.slice(0, 120));
    }
    greeted = true;
    held!.unshift(greeting.rest());
    let early: Buffer;
    try {
      early = await login;
    } catch (e) {
      opts.onLoginError?.(e);
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

