// A streaming parser of the RFB client→server byte stream (RFC 6143 plus the common extensions),
// for the viewer relay. It frames every message whatever way the bytes are split or joined across
// WebSocket frames, so it can
//   - in `view` mode drop everything that is input (keys, pointer, clipboard, desktop size, power,
//     QEMU key events), and close on a message type it cannot frame;
//   - in both modes force ClientInit's shared flag to 1, so no viewer disconnects the others, and
//     close on a pixel format no VNC server should see (some made wayvnc exit, and its box stop);
//   - in `control` mode pass everything and report coarse input activity (never key values).
// Pure: bytes in, bytes out. The viewer relay greets the viewer itself (server/vnc-handshake.ts)
// and starts the filter at ClientInit (`greeted`); from the start, a client that picks security
// None or VNC authentication is framed (its 16-byte response passes), anything else closes.

import { VIEWER_CLOSE } from "../viewer-socket";
import { BODY_PEEK, isTextProvide, providedTextBytes } from "./clipboard";
import { HeldUpdateRequests } from "./held-updates";

export type RfbMode = "view" | "control";

export type RfbInput =
  | { kind: "pointer"; detail: { x: number; y: number; button: number } }
  | { kind: "key"; detail: { presses: number } }
  | { kind: "cut"; detail: { bytes: number } };

export interface RfbClose {
  code: number;
  reason: string;
}

export interface RfbFilterOptions {
  mode: RfbMode;
  /**
   * Control mode only: a button press (once per button, on its press transition, with where),
   * key presses (a count per chunk, never which keys), cut text (its length only): a plain
   * ClientCutText, or an extended clipboard Provide with text (the text's UTF-8 length as sent,
   * without its closing NUL). The extended clipboard's Caps, Request, Peek and Notify are not
   * pastes (noVNC answers a server's Caps with its own on every connection) and are not reported.
   */
  onInput?: (kind: RfbInput["kind"], detail: RfbInput["detail"]) => void;
  /**
   * Asked for every FramebufferUpdateRequest: true holds it back (the filter merges held requests
   * into one, for `release()`), so a viewer that cannot keep up does not make the VNC server
   * produce updates it would only queue. Both modes.
   */
  holdUpdates?: () => boolean;
  /** The handshake up to the security result was done elsewhere: the first byte is ClientInit. */
  greeted?: boolean;
  /**
   * Control mode only: every PointerEvent's position, as it passes (a Wayland box's agent keeps
   * where the pointer is from these: wayvnc cannot be asked).
   */
  onPointer?: (x: number, y: number) => void;
}

export { HeldUpdateRequests } from "./held-updates";

/** Close codes the filter asks for. */
/** How the filter ends a connection whose bytes it cannot trust (the socket's close codes). */
export const RFB_CLOSE = { protocol: VIEWER_CLOSE.protocol, unsupported: VIEWER_CLOSE.unsupported } as const;

/** Client→server message types. */
export const MSG = {
  SetPixelFormat: 0,
  SetEncodings: 2,
  FramebufferUpdateRequest: 3,
  KeyEvent: 4,
  PointerEvent: 5,
  ClientCutText: 6,
  EnableContinuousUpdates: 150,
  ClientFence: 248,
  Xvp: 250,
  SetDesktopSize: 251,
  Gii: 253,
  Qemu: 255,
} as const;

type Phase = "version" | "security" | "vncauth" | "init" | "messages" | "raw" | "closed";

/**
 * What to do with one framed message: its total length, and pass or drop; `input` runs once its
 * head is framed, `body` once its body has streamed through, with at most BODY_PEEK of it.
 */
type Framed = { total: number; pass: boolean; input?: () => void; body?: (head: Buffer) => void };
type Decision = { need: number } | Framed;

const u16 = (b: Buffer, at: number) => b.readUInt16BE(at);

const MAX_HEAD = 12;

export class RfbClientFilter {
  readonly mode: RfbMode;
  /** The protocol version the client asked for, once known: 3, 7 or 8 (the minor of 3.x). */
  version: 3 | 7 | 8 | undefined;
  /** Messages dropped (view mode), by type, for diagnostics and tests. */
  readonly dropped = new Map<number, number>();
  private phase: Phase = "version";
  private readonly head = Buffer.alloc(MAX_HEAD);
  private headLen = 0;
  /** Bytes of the current message still to stream through after its head. */
  private bodyLeft = 0;
  private bodyPass = true;
  private buttons = 0;
  private keyPresses = 0;
  /** The body of the current message as far as it is kept (BODY_PEEK), and who wants it. */
  private bodyWant: ((head: Buffer) => void) | undefined;
  private bodyKept: Buffer[] = [];
  private bodyKeptLen = 0;
  private readonly onInput: RfbFilterOptions["onInput"];
  private readonly holdUpdates: RfbFilterOptions["holdUpdates"];
  private readonly onPointer: RfbFilterOptions["onPointer"];
  private readonly held = new HeldUpdateRequests();

  constructor(opts: RfbFilterOptions) {
    this.mode = opts.mode;
    this.onInput = opts.onInput;
    this.holdUpdates = opts.holdUpdates;
    this.onPointer = opts.onPointer;
    if (opts.greeted) {
      this.phase = "init";
      this.version = 8;
    }
  }

  get closed() {
    return this.phase === "closed";
  }

  /** Update requests held back now. */
  get holding(): number {
    return this.held.count;
  }

  /**
   * The held update requests as one message, when the bytes forwarded so far end on a message
   * boundary (so it can be written to the server between two messages); undefined otherwise.
   */
  release(): Buffer | undefined {
    if (this.phase !== "messages" || this.bodyLeft > 0) return undefined;
    return this.held.take();
  }

  /**
   * Takes the next bytes from the client; returns the bytes to forward to the server and, when
   * the connection must end, why. Bytes of whole messages before the fault are still returned.
   */
  push(chunk: Uint8Array): { out: Buffer; close?: RfbClose } {
    const data = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.phase === "closed") return { out: Buffer.alloc(0) };
    if (this.phase === "raw") return { out: data };
    const out: Buffer[] = [];
    let close: RfbClose | undefined;
    let at = 0;
    this.keyPresses = 0;
    for (;;) {
      if (this.bodyLeft > 0) {
        if (at >= data.length) break;
        const n = Math.min(this.bodyLeft, data.length - at);
        if (this.bodyPass) out.push(data.subarray(at, at + n));
        if (this.bodyWant && this.bodyKeptLen < BODY_PEEK) {
          const keep = data.subarray(at, at + Math.min(n, BODY_PEEK - this.bodyKeptLen));
          this.bodyKept.push(Buffer.from(keep));
          this.bodyKeptLen += keep.length;
        }
        this.bodyLeft -= n;
        at += n;
        if (this.bodyLeft === 0) this.bodyDone();
        continue;
      }
      if ((this.phase as Phase) === "raw") {
        if (at < data.length) out.push(data.subarray(at));
        break;
      }
      // Each decision either asks for more head bytes or frames the whole message.
      const d = this.decide();
      if ("need" in d) {
        if (at >= data.length) break;
        const n = Math.min(d.need - this.headLen, data.length - at);
        data.copy(this.head, this.headLen, at, at + n);
        this.headLen += n;
        at += n;
        continue;
      }
      if (d.total < 0) {
        close = this.fail(d.total === -1 ? RFB_CLOSE.protocol : RFB_CLOSE.unsupported);
        break;
      }
      this.finish(d, out);
    }
    if (this.keyPresses > 0) this.onInput?.("key", { presses: this.keyPresses });
    return { out: out.length === 1 ? out[0]! : Buffer.concat(out), close };
  }

  private failReason = "";

  private fail(code: number): RfbClose {
    this.phase = "closed";
    // A close reason is at most 123 bytes.
    return { code, reason: this.failReason.slice(0, 120) };
  }

  /** Emits the head of a framed message (or drops it) and streams its body. */
  private finish(d: Framed, out: Buffer[]) {
    const headBytes = Math.min(this.headLen, d.total);
    if (d.pass) out.push(Buffer.from(this.head.subarray(0, headBytes)));
    this.bodyLeft = d.total - headBytes;
    this.bodyPass = d.pass;
    this.headLen = 0;
    d.input?.();
    if (d.body) {
      this.bodyWant = d.body;
      if (this.bodyLeft === 0) this.bodyDone();
    }
  }

  private bodyDone() {
    const want = this.bodyWant;
    if (!want) return;
    const kept = this.bodyKept.length === 1 ? this.bodyKept[0]! : Buffer.concat(this.bodyKept);
    this.bodyWant = undefined;
    this.bodyKept = [];
    this.bodyKeptLen = 0;
    want(kept);
  }

  private drop(type: number, total: number, input?: () => void, body?: (head: Buffer) => void): Framed {
    if (this.mode === "control") return { total, pass: true, input, body };
    this.dropped.set(type, (this.dropped.get(type) ?? 0) + 1);
    return { total, pass: false };
  }

  private refuse(code: "protocol" | "unsupported", reason: string): Decision {
    this.failReason = reason;
    return { total: code === "protocol" ? -1 : -2, pass: false };
  }

  /** Given the head so far, says how many head bytes are needed, or frames the message. */
  private decide(): Decision {
    const h = this.head;
    const have = this.headLen;
    switch (this.phase) {
      case "version": {
        if (have < 12) return { need: 12 };
        const m = /^RFB (\d{3})\.(\d{3})\n$/.exec(h.subarray(0, 12).toString("latin1"));
        if (!m) return this.refuse("protocol", "the client did not send an RFB ProtocolVersion");
        if (Number(m[1]) !== 3) return this.refuse("unsupported", `RFB ${Number(m[1])}.x is not supported`);
        const minor = Number(m[2]);
        // As libvncserver reads it: 3.7 is 3.7, above is 3.8 (UltraVNC's 3.14/3.16 too), below is 3.3.
        this.version = minor >= 8 ? 8 : minor === 7 ? 7 : 3;
        this.phase = this.version === 3 ? "init" : "security";
        return { total: 12, pass: true };
      }
      case "security": {
        if (have < 1) return { need: 1 };
        const type = h[0]!;
        if (type === 1) this.phase = "init";
        else if (type === 2) this.phase = "vncauth";
        else return this.refuse("unsupported", `security type ${type} is not supported through the relay`);
        return { total: 1, pass: true };
      }
      case "vncauth":
        this.phase = "init";
        return { total: 16, pass: true };
      case "init": {
        if (have < 1) return { need: 1 };
        h[0] = 1; // shared: never disconnect the other viewers or the agent's own clients
        this.phase = "messages";
        return { total: 1, pass: true };
      }
      case "messages":
        return this.message();
      default:
        return { total: 0, pass: false };
    }
  }

  private message(): Decision {
    const h = this.head;
    const have = this.headLen;
    if (have < 1) return { need: 1 };
    const type = h[0]!;
    switch (type) {
      case MSG.SetPixelFormat: {
        if (have < 6) return { need: 6 };
        // RFC 6143 §7.4: 8, 16 or 32 bits per pixel, and a depth of at most that. Refused in both
        // modes, as bytes no VNC server must see: wayvnc 0.5 exits on 0 bits per pixel, or 32 with a
        // depth of 0 or above 32 (and its box stops with it); x11vnc drops the client.
        const bpp = h[4]!;
        const depth = h[5]!;
        if (bpp !== 8 && bpp !== 16 && bpp !== 32) return this.refuse("protocol", `SetPixelFormat with ${bpp} bits per pixel (8, 16 or 32)`);
        if (depth < 1 || depth > bpp) return this.refuse("protocol", `SetPixelFormat with a depth of ${depth} at ${bpp} bits per pixel`);
        return { total: 20, pass: true };
      }
      case MSG.SetEncodings: {
        if (have < 4) return { need: 4 };
        return { total: 4 + 4 * u16(h, 2), pass: true };
      }
      case MSG.FramebufferUpdateRequest: {
        if (have < 10) return { need: 10 };
        if (this.holdUpdates?.()) {
          this.held.add(h);
          return { total: 10, pass: false };
        }
        return { total: 10, pass: true };
      }
      case MSG.KeyEvent: {
        if (have < 8) return { need: 8 };
        const down = h[1] !== 0;
        return this.drop(type, 8, down ? () => this.keyPresses++ : undefined);
      }
      case MSG.PointerEvent: {
        if (have < 6) return { need: 6 };
        const mask = h[1]!;
        const x = u16(h, 2);
        const y = u16(h, 4);
        return this.drop(type, 6, () => this.pointer(mask, x, y));
      }
      case MSG.ClientCutText: {
        if (have < 8) return { need: 8 };
        const len = h.readInt32BE(4);
        if (len >= 0) return this.drop(type, 8 + len, () => this.onInput?.("cut", { bytes: len }));
        // Extended clipboard: a negative length, |length| bytes of payload that start with flags.
        const size = -len;
        if (size < 4) return this.drop(type, 8 + size);
        if (have < 12) return { need: 12 };
        if (!isTextProvide(h.readUInt32BE(8))) return this.drop(type, 8 + size);
        return this.drop(type, 8 + size, undefined, (stream) => {
          const bytes = providedTextBytes(stream);
          if (bytes !== undefined) this.onInput?.("cut", { bytes });
        });
      }
      case MSG.EnableContinuousUpdates:
        return { total: 10, pass: true };
      case MSG.ClientFence: {
        if (have < 9) return { need: 9 };
        return { total: 9 + h[8]!, pass: true };
      }
      case MSG.Xvp:
        // Shut down, reboot or reset the machine: control only.
        return this.drop(type, 4);
      case MSG.SetDesktopSize: {
        if (have < 8) return { need: 8 };
        return this.drop(type, 8 + 16 * h[6]!);
      }
      case MSG.Gii: {
        // General Input Interface: input devices and their events. Length in the sender's byte order.
        if (have < 4) return { need: 4 };
        const bigEndian = (h[1]! & 0x80) !== 0;
        const len = bigEndian ? h.readUInt16BE(2) : h.readUInt16LE(2);
        return this.drop(type, 4 + len);
      }
      case MSG.Qemu: {
        if (have < 2) return { need: 2 };
        const sub = h[1]!;
        if (sub === 0) {
          if (have < 12) return { need: 12 };
          const down = u16(h, 2) !== 0;
          return this.drop(type, 12, down ? () => this.keyPresses++ : undefined);
        }
        if (sub === 1) {
          // Audio: 0 enable, 1 disable (4 bytes); 2 set format (+ u8 format, u8 channels, u32 Hz).
          if (have < 4) return { need: 4 };
          const op = u16(h, 2);
          if (op === 0 || op === 1) return { total: 4, pass: true };
          if (op === 2) return { total: 10, pass: true };
          return this.unknown(`QEMU audio operation ${op}`);
        }
        return this.unknown(`QEMU message subtype ${sub}`);
      }
      default:
        return this.unknown(`message type ${type}`);
    }
  }

  /** A message the filter cannot frame. In control mode the rest passes unparsed (the server judges it). */
  private unknown(what: string): Decision {
    if (this.mode === "control") {
      this.phase = "raw";
      return { total: this.headLen, pass: true };
    }
    return this.refuse("unsupported", `view mode: the client sent ${what}, which cannot be framed`);
  }

  private pointer(mask: number, x: number, y: number) {
    this.onPointer?.(x, y);
    const pressed = mask & ~this.buttons;
    this.buttons = mask;
    if (!pressed) return;
    for (let bit = 0; bit < 8; bit++) {
      if (pressed & (1 << bit)) this.onInput?.("pointer", { x, y, button: bit + 1 });
    }
  }
}
