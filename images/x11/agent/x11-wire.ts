// A minimal X11 protocol client: one Unix socket, little-endian, promise per reply.
// Written here rather than taken from npm so that the hot paths (XTEST input, 4 MB GetImage
// replies) stay allocation-light and fully typed, and so nothing depends on an unmaintained
// callback API.
import net from "node:net";
import os from "node:os";
import fs from "node:fs";

export interface XVisualFormat {
  depth: number;
  bitsPerPixel: number;
  scanlinePad: number;
}

export interface XSetup {
  resourceIdBase: number;
  resourceIdMask: number;
  maxRequestLength: number;
  imageByteOrder: number;
  minKeycode: number;
  maxKeycode: number;
  formats: XVisualFormat[];
  root: number;
  width: number;
  height: number;
  rootDepth: number;
  rootVisual: number;
}

export class XProtocolError extends Error {
  constructor(
    readonly errorCode: number,
    readonly majorOpcode: number,
    readonly minorOpcode: number,
    readonly badValue: number,
  ) {
    super(`X error ${errorCode} (${X_ERROR_NAMES[errorCode] ?? "?"}) on request ${majorOpcode}.${minorOpcode}, value 0x${badValue.toString(16)}`);
  }
}

const X_ERROR_NAMES: Record<number, string> = {
  1: "BadRequest", 2: "BadValue", 3: "BadWindow", 4: "BadPixmap", 5: "BadAtom", 6: "BadCursor",
  7: "BadFont", 8: "BadMatch", 9: "BadDrawable", 10: "BadAccess", 11: "BadAlloc", 13: "BadGC",
  14: "BadIDChoice", 15: "BadName", 16: "BadLength", 17: "BadImplementation",
};

export class XTimeoutError extends Error {}
export class XClosedError extends Error {}

/** Builds one request; the length field is filled in by `finish`. */
export class Req {
  private buf: Buffer;
  private off = 4;
  constructor(opcode: number, data = 0, capacity = 64) {
    this.buf = Buffer.alloc(Math.max(capacity, 4));
    this.buf[0] = opcode;
    this.buf[1] = data;
  }
  private ensure(n: number): void {
    if (this.off + n <= this.buf.length) return;
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.off + n));
    this.buf.copy(next, 0, 0, this.off);
    this.buf = next;
  }
  u8(v: number): this { this.ensure(1); this.buf.writeUInt8(v & 0xff, this.off); this.off += 1; return this; }
  u16(v: number): this { this.ensure(2); this.buf.writeUInt16LE(v & 0xffff, this.off); this.off += 2; return this; }
  i16(v: number): this { this.ensure(2); this.buf.writeInt16LE(v, this.off); this.off += 2; return this; }
  u32(v: number): this { this.ensure(4); this.buf.writeUInt32LE(v >>> 0, this.off); this.off += 4; return this; }
  i32(v: number): this { this.ensure(4); this.buf.writeInt32LE(v | 0, this.off); this.off += 4; return this; }
  bytes(b: Buffer): this { this.ensure(b.length); b.copy(this.buf, this.off); this.off += b.length; return this; }
  pad(n: number): this { this.ensure(n); this.off += n; return this; }
  align(): this { return this.pad((4 - (this.off % 4)) % 4); }
  finish(): Buffer {
    this.align();
    this.buf.writeUInt16LE(this.off / 4, 2);
    return this.buf.subarray(0, this.off);
  }
}

interface Pending {
  resolve: (reply: Buffer) => void;
  reject: (err: Error) => void;
  timer?: NodeJS.Timeout;
  /** The request's number among all this connection wrote (`mark()`). */
  n: number;
}

const pad4 = (n: number): number => (n + 3) & ~3;
const READ_BUFFER_BYTES = 1 << 20;

/** Reads MIT-MAGIC-COOKIE-1 for `display` from XAUTHORITY or ~/.Xauthority, if any. */
function findCookie(display: number): { name: string; data: Buffer } | null {
  const file = process.env.XAUTHORITY ?? `${os.homedir()}/.Xauthority`;
  let raw: Buffer;
  try {
    raw = fs.readFileSync(file);
  } catch {
    return null;
  }
  const host = os.hostname();
  let off = 0;
  const field = (): Buffer => {
    const len = raw.readUInt16BE(off);
    const out = raw.subarray(off + 2, off + 2 + len);
    off += 2 + len;
    return out;
  };
  try {
    while (off + 2 <= raw.length) {
      const family = raw.readUInt16BE(off);
      off += 2;
      const address = field().toString("latin1");
      const number = field().toString("latin1");
      const name = field().toString("latin1");
      const data = field();
      const local = family === 256 && address === host;
      if ((local || family === 65535) && (number === "" || number === String(display)) && name === "MIT-MAGIC-COOKIE-1") {
        return { name, data: Buffer.from(data) };
      }
    }
  } catch {
    return null;
  }
  return null;
}

function parseSetup(b: Buffer): XSetup {
  // `b` is the whole success reply including its 8-byte header.
  const vendorLen = b.readUInt16LE(24);
  const maxRequestLength = b.readUInt16LE(26);
  const numScreens = b[28];
  const numFormats = b[29];
  const imageByteOrder = b[30];
  const minKeycode = b[34];
  const maxKeycode = b[35];
  let off = 40 + pad4(vendorLen);
  const formats: XVisualFormat[] = [];
  for (let i = 0; i < numFormats; i++) {
    formats.push({ depth: b[off], bitsPerPixel: b[off + 1], scanlinePad: b[off + 2] });
    off += 8;
  }
  if (numScreens < 1) throw new Error("X server has no screens");
  return {
    resourceIdBase: b.readUInt32LE(12),
    resourceIdMask: b.readUInt32LE(16),
    maxRequestLength,
    imageByteOrder,
    minKeycode,
    maxKeycode,
    formats,
    root: b.readUInt32LE(off),
    width: b.readUInt16LE(off + 20),
    height: b.readUInt16LE(off + 22),
    rootVisual: b.readUInt32LE(off + 32),
    rootDepth: b[off + 38],
  };
}

export class XConnection {
  private seq = 0;
  private readonly pending = new Map<number, Pending>();
  private readonly head = Buffer.alloc(32);
  private headFill = 0;
  private msg: Buffer | null = null;
  private msgFill = 0;
  private corked = false;
  private nextId = 0;
  private closeListeners: Array<(err: Error) => void> = [];
  closed = false;
  /** Errors for requests that expect no reply; the caller checks them after a sync. */
  readonly voidErrors: XProtocolError[] = [];
  /** Sequence numbers of requests sent with `sendQuiet`. */
  private readonly quiet = new Set<number>();
  /** Requests written, ever; and the newest of them whose reply or error has come back. */
  private written = 0;
  private answered = 0;
  onEvent: ((ev: Buffer) => void) | null = null;

  private constructor(
    private readonly sock: net.Socket,
    readonly setup: XSetup,
    readonly display: number,
  ) {}

  static connect(display: number, timeoutMs = 1000): Promise<XConnection> {
    return new Promise((resolve, reject) => {
      // libuv reads into this one buffer (up to its size per read) instead of a fresh 64 KB
      // buffer per read: a 4 MB GetImage reply arrives 3–4× faster. Bytes are copied out at once.
      let handler: (chunk: Buffer) => void = () => undefined;
      const readBuffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
      const sock = net.createConnection({
        path: `/tmp/.X11-unix/X${display}`,
        onread: {
          buffer: readBuffer,
          callback: (n: number, buf: Uint8Array) => {
            handler(Buffer.from(buf.buffer, buf.byteOffset, n));
            return true;
          },
        },
      });
      let acc = Buffer.alloc(0);
      const timer = setTimeout(() => fail(new XTimeoutError(`X display :${display} did not answer the setup in ${timeoutMs} ms`)), timeoutMs);
      const fail = (err: Error): void => {
        clearTimeout(timer);
        handler = () => undefined;
        sock.removeAllListeners();
        sock.on("error", () => undefined);
        sock.destroy();
        reject(err);
      };
      sock.on("error", fail);
      sock.on("close", () => fail(new XClosedError(`X display :${display} closed during setup`)));
      sock.on("connect", () => {
        const cookie = findCookie(display);
        const name = Buffer.from(cookie?.name ?? "", "latin1");
        const data = cookie?.data ?? Buffer.alloc(0);
        const head = Buffer.alloc(12);
        head[0] = 0x6c; // 'l': little-endian
        head.writeUInt16LE(11, 2);
        head.writeUInt16LE(0, 4);
        head.writeUInt16LE(name.length, 6);
        head.writeUInt16LE(data.length, 8);
        sock.write(Buffer.concat([head, name, Buffer.alloc(pad4(name.length) - name.length), data, Buffer.alloc(pad4(data.length) - data.length)]));
      });
      handler = (chunk: Buffer) => {
        acc = Buffer.concat([acc, chunk]);
        if (acc.length < 8) return;
        const total = 8 + acc.readUInt16LE(6) * 4;
        if (acc.length < total) return;
        const status = acc[0];
        if (status !== 1) {
          const reason = acc.subarray(8, 8 + acc[1]).toString("latin1") || "authentication required";
          fail(new Error(`X display :${display} refused the connection: ${reason}`));
          return;
        }
        clearTimeout(timer);
        sock.removeAllListeners();
        let setup: XSetup;
        try {
          setup = parseSetup(acc.subarray(0, total));
        } catch (err) {
          handler = () => undefined;
          sock.destroy();
          reject(err as Error);
          return;
        }
        const conn = new XConnection(sock, setup, display);
        const rest = acc.subarray(total);
        handler = (c) => conn.onData(c);
        sock.setNoDelay(true);
        sock.on("error", (err) => conn.shutdown(err));
        sock.on("close", () => conn.shutdown(new XClosedError(`X display :${display} closed the connection`)));
        if (rest.length) conn.onData(rest);
        resolve(conn);
      };
    });
  }

  /** A point in this connection's requests, for `answeredSince`. */
  mark(): number {
    return this.written;
  }

  /**
   * Whether a request written after `mark` has been answered. The server sends events and replies
   * in order, and this connection hands out events as it reads them: once true, every event the
   * server sent before it handled that request has been handled here.
   */
  answeredSince(mark: number): boolean {
    return this.answered > mark;
  }

  allocId(): number {
    const { resourceIdBase, resourceIdMask } = this.setup;
    // The mask's lowest set bit is the step between ids.
    const step = resourceIdMask & -resourceIdMask;
    this.nextId += step;
    return (resourceIdBase | (this.nextId & resourceIdMask)) >>> 0;
  }

  onClose(fn: (err: Error) => void): void {
    this.closeListeners.push(fn);
  }

  close(): void {
    this.shutdown(new XClosedError("connection closed by the agent"));
  }

  private shutdown(err: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.sock.destroy();
    for (const p of this.pending.values()) {
      if (p.timer) clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
    for (const fn of this.closeListeners) fn(err);
  }

  private write(buf: Buffer): number {
    if (this.closed) throw new XClosedError(`X display :${this.display} is not connected`);
    // Cork until the end of the tick so bursts of small requests (typing) leave in one writev.
    if (!this.corked) {
      this.corked = true;
      this.sock.cork();
      process.nextTick(() => {
        this.corked = false;
        this.sock.uncork();
      });
    }
    this.sock.write(buf);
    this.written++;
    this.seq = (this.seq + 1) & 0xffff;
    return this.seq;
  }

  /** Sends a request that has no reply. */
  send(buf: Buffer): void {
    this.write(buf);
  }

  /**
   * Sends a request that has no reply and whose error, if any, nobody wants: a window may be gone
   * by the time it arrives. Its error must not reach `voidErrors`, where the next input sync would
   * report it as the step's.
   */
  sendQuiet(buf: Buffer): void {
    const seq = this.write(buf);
    this.quiet.add(seq);
    // Successes leave no trace on the wire: only the newest few are kept.
    if (this.quiet.size > 1024) this.quiet.delete(this.quiet.values().next().value as number);
  }

  /** Sends a request and resolves with its whole reply (32-byte header included). */
  request(buf: Buffer, timeoutMs = 5000): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      let seq: number;
      try {
        seq = this.write(buf);
      } catch (err) {
        reject(err as Error);
        return;
      }
      const p: Pending = { resolve, reject, n: this.written };
      if (timeoutMs > 0) {
        p.timer = setTimeout(() => {
          // Keep the slot so the late reply is recognised and dropped.
          p.resolve = () => undefined;
          p.reject = () => undefined;
          reject(new XTimeoutError(`X display :${this.display} did not answer within ${timeoutMs} ms`));
        }, timeoutMs);
      }
      this.pending.set(seq, p);
    });
  }

  /**
   * `chunk` is only valid during this call (the read buffer is reused): every message is copied
   * out, a large reply straight into its own buffer, once.
   */
  private onData(chunk: Buffer): void {
    let off = 0;
    while (off < chunk.length) {
      if (this.msg) {
        const n = Math.min(this.msg.length - this.msgFill, chunk.length - off);
        chunk.copy(this.msg, this.msgFill, off, off + n);
        this.msgFill += n;
        off += n;
        if (this.msgFill === this.msg.length) {
          const msg = this.msg;
          this.msg = null;
          this.dispatch(msg);
        }
        continue;
      }
      const n = Math.min(32 - this.headFill, chunk.length - off);
      chunk.copy(this.head, this.headFill, off, off + n);
      this.headFill += n;
      off += n;
      if (this.headFill < 32) return;
      this.headFill = 0;
      const kind = this.head[0];
      const total = kind === 1 || (kind & 0x7f) === 35 ? 32 + this.head.readUInt32LE(4) * 4 : 32;
      const msg = Buffer.allocUnsafe(total);
      this.head.copy(msg, 0, 0, 32);
      if (total === 32) this.dispatch(msg);
      else {
        this.msg = msg;
        this.msgFill = 32;
      }
    }
  }

  private dispatch(msg: Buffer): void {
    const kind = msg[0];
    if (kind === 0) this.onError(msg);
    else if (kind === 1) this.onReply(msg);
    else this.onEvent?.(msg);
  }

  private onReply(msg: Buffer): void {
    const seq = msg.readUInt16LE(2);
    const p = this.pending.get(seq);
    if (!p) return;
    this.pending.delete(seq);
    if (p.n > this.answered) this.answered = p.n;
    if (p.timer) clearTimeout(p.timer);
    p.resolve(msg);
  }

  private onError(msg: Buffer): void {
    const seq = msg.readUInt16LE(2);
    const err = new XProtocolError(msg[1], msg[10], msg.readUInt16LE(8), msg.readUInt32LE(4));
    const p = this.pending.get(seq);
    if (p) {
      this.pending.delete(seq);
      if (p.n > this.answered) this.answered = p.n;
      if (p.timer) clearTimeout(p.timer);
      p.reject(err);
      return;
    }
    if (this.quiet.delete(seq)) return;
    if (this.voidErrors.length < 64) this.voidErrors.push(err);
  }
}
