// A Wayland screen (docs/decisions/0030): headless sway as `desk`, wayvnc on a UNIX socket only
// root can open. The agent drives input as an RFB client of that wayvnc (PointerEvent and
// KeyEvent, which wayvnc turns into the wlroots virtual pointer and keyboard protocols), types
// text outside the keymap with wtype, and asks sway over its IPC socket (the i3 protocol) for
// windows. Frames come over the same RFB session (wayland-rfb-frames.ts), or from grim for what
// wayvnc does not draw (the pointer) or scales (wayland-views.ts).
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import type { InputBackend, KeyToken } from "./input";
import { ByteReader } from "../../../app/protocol/rfb/handshake";
import { displayEnv } from "./proc";
import { AgentError } from "./errors";
import { sleep, withTimeout } from "./util";
import { RfbFrames } from "./wayland-rfb-frames";
import { wtypeText } from "./wayland-wtype";
import { IPC_GET_VERSION, SwayIpc } from "./sway-ipc";
import { textUnits, type TextUnit } from "./keyboard";

export interface Point {
  x: number;
  y: number;
}

/** What the input steps need of a screen, on X11 and Wayland alike. */
export interface Desk {
  input: InputBackend;
  width: number;
  height: number;
  /** Where the pointer is now. */
  pointer(): Promise<Point>;
}

/** The paths of screen n's sockets. */
export function waylandPaths(runtimeBase: string, index: number) {
  const runtime = `${runtimeBase}-${index}`;
  return {
    runtime,
    wayland: path.join(runtime, "wayland-1"),
    sway: path.join(runtime, "sway.sock"),
    /** XWayland's DISPLAY, written by sway's config once it listens (x11_apps only). */
    x11Display: path.join(runtime, "x11-display"),
    /** wayvnc's socket, in a folder only root may enter. */
    vnc: path.join(path.dirname(runtimeBase), "vnc", `wayvnc-${index}.sock`),
  };
}

/** Registers the environment children started on a Wayland screen get (proc.ts childEnv). */
export function registerWaylandDisplay(name: string, runtimeBase: string, index: number): void {
  const p = waylandPaths(runtimeBase, index);
  displayEnv.set(name, () => {
    let x11 = "";
    try {
      x11 = fs.readFileSync(p.x11Display, "utf8").trim();
    } catch {
      // no XWayland on this box
    }
    return { WAYLAND_DISPLAY: "wayland-1", XDG_RUNTIME_DIR: p.runtime, SWAYSOCK: p.sway, ...(x11 ? { DISPLAY: x11 } : {}) };
  });
}

/** Keysyms wayvnc's keymap (US) has: printable ASCII, Return, Tab, BackSpace, Escape. */
function inWayvncKeymap(sym: number): boolean {
  return (sym >= 0x20 && sym <= 0x7e) || sym === 0xff0d || sym === 0xff09 || sym === 0xff08 || sym === 0xff1b;
}

/**
 * A character beyond U+FFFF as two keys, its UTF-16 high and low surrogate as Unicode keysyms.
 * Chromium on Wayland takes one UTF-16 unit from a key event (a key of U+1F600 inserted U+F600),
 * and inserts the two units of two keys as the one character (measured: the field's value is
 * U+1F600; the page's `input` events carry one unit each).
 */
export function surrogateUnits(u: TextUnit): TextUnit[] {
  const cp = u.ch.codePointAt(0) ?? 0;
  if (cp <= 0xffff) return [u];
  return [u.ch.charCodeAt(0), u.ch.charCodeAt(1)].map((unit) => ({ sym: 0x01000000 + unit, ch: String.fromCharCode(unit) }));
}

/** A wheel "button" (4–7) is a press and release of its own; 1–3 are held in the mask. */
const buttonBit = (b: number): number => 1 << (b - 1);

/**
 * Events written to wayvnc between two catch-ups (`RfbInput.catchUp`). wayvnc hands each event to
 * sway as a Wayland request the moment it reads it and never waits for sway; when sway fell a few
 * hundred kilobytes behind (6,000 key events at once did it on an idle machine, a few hundred on a
 * loaded one), wayvnc 0.5's connection to sway failed for good ("Error sending request: Resource
 * temporarily unavailable": libwayland 1.21 treats a full socket as fatal) and no input or frame
 * reached that screen again. 64 events are at most ~3 KB of requests: one read of sway's (4 KB).
 */
export const EVENTS_PER_CATCH_UP = 64;

/** RFB client input over wayvnc's socket: one 6- or 8-byte message per event. */
export class RfbInput implements InputBackend {
  readonly kind = "wayvnc";
  private mask = 0;
  private sinceCatchUp = 0;
  x = 0;
  y = 0;
  /**
   * Resolves once wayvnc has handled every event written before it and sway has turned its loop
   * since (WaylandDesk: a frame update asked after them, which wayvnc answers in order, then a
   * round trip on sway's IPC socket, which sway answers as slowly as it reads wayvnc's requests
   * when it is short of CPU). Input waits for it every EVENTS_PER_CATCH_UP events.
   */
  catchUp?: () => Promise<void>;

  constructor(
    private readonly sock: net.Socket,
    private readonly display: string,
  ) {}

  private pointerEvent(): void {
    const b = Buffer.allocUnsafe(6);
    b[0] = 5;
    b[1] = this.mask;
    b.writeUInt16BE(this.x, 2);
    b.writeUInt16BE(this.y, 4);
    this.sock.write(b);
  }

  private keyEvent(down: boolean, keysym: number): void {
    const b = Buffer.alloc(8);
    b[0] = 4;
    b[1] = down ? 1 : 0;
    b.writeUInt32BE(keysym >>> 0, 4);
    this.sock.write(b);
  }

  /** After `n` events written: lets sway catch up when EVENTS_PER_CATCH_UP have gone since it last did. */
  private async paced(n = 1): Promise<void> {
    this.sinceCatchUp += n;
    if (this.sinceCatchUp < EVENTS_PER_CATCH_UP || !this.catchUp) return;
    this.sinceCatchUp = 0;
    await this.catchUp();
  }

  async move(x: number, y: number): Promise<void> {
    this.x = x;
    this.y = y;
    this.pointerEvent();
    await this.paced();
  }

  async button(button: number, down: boolean): Promise<void> {
    if (button < 1 || button > 8) throw new AgentError("bad_request", `button ${button} is not 1–8`);
    if (down) this.mask |= buttonBit(button);
    else this.mask &= ~buttonBit(button);
    this.pointerEvent();
    await this.paced();
  }

  async doubleClick(button: number, gapMs: number): Promise<void> {
    await this.button(button, true);
    await this.button(button, false);
    await this.sync();
    await sleep(gapMs);
    await this.button(button, true);
    await this.button(button, false);
  }

  async keyDown(keysym: number): Promise<KeyToken> {
    this.keyEvent(true, keysym);
    await this.paced();
    return { keysym };
  }

  async keyUp(token: KeyToken): Promise<void> {
    this.keyEvent(false, token.keysym);
    await this.paced();
  }

  async typeText(text: string, delayMs: number, opts: { astralAsSurrogates?: boolean } = {}): Promise<void> {
    const units = opts.astralAsSurrogates ? textUnits(text).flatMap(surrogateUnits) : textUnits(text);
    if (!units.every((u) => inWayvncKeymap(u.sym))) {
      // Text outside the keymap goes whole through wtype (wayland-wtype.ts): its keys and
      // wayvnc's reach the page in the order sent only if one keyboard sends them all. wtype
      // talks to sway past wayvnc, so it starts once sway has what wayvnc was sent (a catch-up):
      // the events only written, on a busy box wtype's first keys reached the page before the
      // click that focused the field ("fork ✓" arrived as " ✓").
      this.sinceCatchUp = 0;
      await (this.catchUp ? this.catchUp() : this.sync());
      return wtypeText(this.display, units, delayMs);
    }
    for (const u of units) {
      this.keyEvent(true, u.sym);
      this.keyEvent(false, u.sym);
      await this.paced(2);
      if (delayMs > 0) {
        await this.sync();
        await sleep(delayMs);
      }
    }
    await this.sync();
  }

  /**
   * Resolves once every event is written to wayvnc. RFB has no round trip for input, so this is
   * weaker than X's: wayvnc forwards them to sway in its next loop turn, in order (ADR 0030).
   */
  async sync(): Promise<number> {
    if (this.sock.destroyed) throw new AgentError("failed", "the connection to wayvnc closed");
    await new Promise<void>((resolve, reject) => this.sock.write(Buffer.alloc(0), (err) => (err ? reject(err) : resolve())));
    await new Promise((r) => setImmediate(r));
    return 0;
  }
}

/**
 * Closes a connection to wayvnc without crashing it. wayvnc 0.5 (neatvnc 0.5.4) frees a client
 * whose write fails with EPIPE at once, in the middle of what was writing to it: its greeting
 * (seen here: 100 connect-and-close in a row killed it, and the box with it), or a clipboard
 * change it sends to every client (nvnc_send_cut_text: seen here, a paste while viewers came and
 * went stopped the box with status 12). So no write of wayvnc's may find the socket closed: the
 * agent only ends its side (wayvnc reads the end and closes the client in its own time, safely),
 * reads and drops what comes meanwhile, and lets go once wayvnc closed, or after a while if it
 * never does. Before its greeting, it waits for that first.
 */
export function closeWayvnc(sock: net.Socket, greeted: boolean): void {
  if (sock.destroyed) return;
  const done = () => sock.destroy();
  setTimeout(done, 5000).unref();
  const end = () => {
    sock.unpipe();
    sock.removeAllListeners("data");
    sock.once("close", done);
    sock.end();
    sock.resume();
  };
  if (greeted) end();
  else sock.once("data", end);
}

// wayvnc 0.5 (neatvnc 0.5.4, nvnc_send_cut_text) sends each clipboard change in the box (a
// viewer's paste, a copy in a page) to every client, one still in its handshake included: a
// ServerCutText between two handshake messages. Read as the next handshake message, it ended a
// person's fresh viewer (4502) or reached it as its ServerInit. So the handshake reads skip it:
// type 3, three bytes of padding (not zeroed by neatvnc: any bytes), a 4-byte length, the text.
// No handshake message of wayvnc's starts with a 3 where one can come: it offers one security
// type, never three; a security result is 0 or 1; a ServerInit's pixel format (byte 4) has 8, 16
// or 32 bits a pixel, where a cut text's length below 16 MB has a 0.
type Read = (n: number) => Promise<Buffer>;

/** Skips the text of a ServerCutText whose first 4 bytes (type and padding) were read. */
async function skipCutText(read: Read): Promise<void> {
  await read((await read(4)).readUInt32BE(0));
}

/** Reads wayvnc's greeting and picks None; resolves when wayvnc waits for ClientInit. */
export async function loginNone(read: Read, write: (b: Buffer) => void): Promise<void> {
  const version = (await read(12)).toString("latin1");
  if (!/^RFB 003\.\d{3}\n$/.test(version)) throw new Error(`wayvnc did not greet with RFB 3.x: ${JSON.stringify(version)}`);
  write(Buffer.from("RFB 003.008\n", "latin1"));
  let n: number;
  while ((n = (await read(1))[0]!) === 3) {
    await read(3);
    await skipCutText(read);
  }
  if (n === 0) throw new Error("wayvnc refused the connection");
  const types = [...(await read(n))];
  if (!types.includes(1)) throw new Error(`wayvnc offers security types ${types.join(", ")}, not None`);
  write(Buffer.from([1]));
  let result: Buffer;
  while ((result = await read(4))[0] === 3) await skipCutText(read);
  if (result.readUInt32BE(0) !== 0) throw new Error("wayvnc refused the session");
}

/** wayvnc's ServerInit (it comes once it has the ClientInit), past any ServerCutText before it. */
export async function readServerInit(read: Read): Promise<Buffer> {
  for (;;) {
    // Both are 8 bytes long at least.
    const head = await read(8);
    if (head[0] === 3 && head[4] === 0) {
      await read(head.readUInt32BE(4));
      continue;
    }
    const init = Buffer.concat([head, await read(16)]);
    return Buffer.concat([init, await read(init.readUInt32BE(20))]);
  }
}

/** A client connection to wayvnc: RFB 3.8, security None (the socket is root's alone), shared. */
async function rfbConnect(socketPath: string, timeoutMs: number): Promise<{ sock: net.Socket; reader: ByteReader; width: number; height: number }> {
  const sock = net.connect(socketPath);
  const reader = new ByteReader();
  let greeted = false;
  const onData = (c: Buffer) => {
    greeted = true;
    reader.push(c);
  };
  sock.on("data", onData);
  sock.on("error", (e) => reader.fail(e));
  sock.on("close", () => reader.fail(new Error("wayvnc closed the connection")));
  const timer = setTimeout(() => reader.fail(new Error(`wayvnc did not answer within ${timeoutMs} ms`)), timeoutMs);
  try {
    await loginNone((n) => reader.read(n), (b) => sock.write(b));
    sock.write(Buffer.from([1])); // ClientInit: shared
    const init = await readServerInit((n) => reader.read(n));
    // From here the reader is RfbFrames': updates it asks for, and what wayvnc sends unasked.
    return { sock, reader, width: init.readUInt16BE(0), height: init.readUInt16BE(2) };
  } catch (err) {
    sock.off("data", onData);
    closeWayvnc(sock, greeted);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** How long input waits for wayvnc and sway to catch up before the step fails. */
const CATCH_UP_TIMEOUT_MS = 20_000;

/** A live Wayland screen: input through wayvnc, sway's IPC; reconnected by the Screen when either drops. */
export class WaylandDesk implements Desk {
  private constructor(
    readonly input: RfbInput,
    readonly ipc: SwayIpc,
    readonly width: number,
    readonly height: number,
    private readonly sock: net.Socket,
    readonly frames: RfbFrames,
    private readonly vncPath: string,
  ) {}

  /**
   * A session of its own that keeps a copy of the screen current, asking at most `fps` times a
   * second for what changed (a recording's: ADR 0030). Close it when done.
   */
  async followFrames(fps: number, opts: { yuv?: boolean; timeoutMs?: number } = {}): Promise<RfbFrames> {
    const { sock, reader, width, height } = await rfbConnect(this.vncPath, opts.timeoutMs ?? 5000);
    return new RfbFrames(sock, reader, width, height, fps, opts.yuv);
  }

  static async open(runtimeBase: string, index: number, display: string, timeoutMs: number): Promise<WaylandDesk> {
    const p = waylandPaths(runtimeBase, index);
    const ipc = await SwayIpc.connect(p.sway, timeoutMs);
    try {
      const { sock, reader, width, height } = await rfbConnect(p.vnc, timeoutMs);
      const input = new RfbInput(sock, display);
      const frames = new RfbFrames(sock, reader, width, height);
      input.catchUp = async () => {
        const late = () => new Error(`sway did not answer within ${CATCH_UP_TIMEOUT_MS} ms`);
        try {
          // A request already on its way was written before these events: its answer proves
          // nothing of them, so the catch-up asks again once it has come.
          if (frames.asking) await frames.capture(CATCH_UP_TIMEOUT_MS, false);
          await frames.capture(CATCH_UP_TIMEOUT_MS);
          await withTimeout(ipc.request(IPC_GET_VERSION), CATCH_UP_TIMEOUT_MS, late);
        } catch (err) {
          throw new AgentError("failed", `the screen stopped taking input (${err instanceof Error ? err.message : String(err)})`);
        }
      };
      // Start from the middle, as Xvfb does, so `cursor` answers something true before any move.
      input.x = Math.floor(width / 2);
      input.y = Math.floor(height / 2);
      return new WaylandDesk(input, ipc, width, height, sock, frames, p.vnc);
    } catch (err) {
      ipc.close();
      throw err;
    }
  }

  get closed(): boolean {
    return this.sock.destroyed || this.ipc.closed;
  }

  onClose(fn: () => void): void {
    this.sock.once("close", fn);
  }

  /**
   * Where the pointer is: wayvnc cannot be asked, and sway does not say, so it is where the last
   * one to move it put it: this agent, or a viewer (`pointerMovedTo`).
   */
  async pointer(): Promise<Point> {
    return { x: this.input.x, y: this.input.y };
  }

  /** A viewer moved the pointer; a click with no place of its own goes there too. */
  pointerMovedTo(x: number, y: number): void {
    this.input.x = Math.min(Math.max(0, x), this.width - 1);
    this.input.y = Math.min(Math.max(0, y), this.height - 1);
  }

  close(): void {
    closeWayvnc(this.sock, true);
    this.ipc.close();
  }
}
