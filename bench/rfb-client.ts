import net from "node:net";
import WebSocket from "ws";
import { type TestServer, json } from "../tests/support/server";
import { now } from "./stats";

// A minimal RFB client (raw encoding, security None or VNC authentication) over a WebSocket or a
// TCP socket: the viewer bench's two sides, and the integration tests' viewer.

interface Transport {
  send(b: Buffer): void;
  close(): void;
}

/** Bytes from the server, read as they arrive (no copy of large bodies that are only skipped). */
class ByteQueue {
  private chunks: { buf: Buffer; at: number }[] = [];
  private off = 0;
  avail = 0;
  private waiter: (() => void) | undefined;
  private error: Error | undefined;

  push(buf: Buffer) {
    this.chunks.push({ buf, at: now() });
    this.avail += buf.length;
    this.wake();
  }

  fail(err: Error) {
    this.error ??= err;
    this.wake();
  }

  private wake() {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  private async wait() {
    if (this.error) throw this.error;
    await new Promise<void>((r) => (this.waiter = r));
    if (this.error && this.avail === 0) throw this.error;
  }

  /** Arrival time of the next unread byte (waits for it). */
  async nextAt(): Promise<number> {
    while (this.avail === 0) await this.wait();
    return this.chunks[0]!.at;
  }

  async read(n: number): Promise<Buffer> {
    while (this.avail < n) await this.wait();
    const parts: Buffer[] = [];
    let left = n;
    while (left > 0) {
      const c = this.chunks[0]!;
      const take = Math.min(left, c.buf.length - this.off);
      parts.push(c.buf.subarray(this.off, this.off + take));
      this.off += take;
      left -= take;
      if (this.off === c.buf.length) {
        this.chunks.shift();
        this.off = 0;
      }
    }
    this.avail -= n;
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  async skip(n: number): Promise<void> {
    let left = n;
    while (left > 0) {
      while (this.avail === 0) await this.wait();
      const c = this.chunks[0]!;
      const take = Math.min(left, c.buf.length - this.off);
      this.off += take;
      left -= take;
      this.avail -= take;
      if (this.off === c.buf.length) {
        this.chunks.shift();
        this.off = 0;
      }
    }
  }
}

export interface ServerInit {
  width: number;
  height: number;
  bpp: number;
  name: string;
}

export interface Update {
  /** When the first byte of the update arrived (performance.now()). */
  firstByteAt: number;
  rects: { x: number; y: number; w: number; h: number; encoding: number }[];
  bytes: number;
}

/** Speaks RFB 3.8 (security None, raw encoding) over a WebSocket or a TCP socket. */
export class RfbClient {
  readonly q = new ByteQueue();
  init!: ServerInit;
  /** Set when the transport closes: the WebSocket close code and reason, or 0 for TCP. */
  closed: Promise<{ code: number; reason: string }>;
  cutTexts: string[] = [];
  private constructor(private t: Transport, closed: Promise<{ code: number; reason: string }>) {
    this.closed = closed;
  }

  static async overWebSocket(url: string, protocols?: string[]): Promise<RfbClient & { ws: WebSocket }> {
    const ws = new WebSocket(url, protocols, { perMessageDeflate: false });
    let closedWith: (v: { code: number; reason: string }) => void = () => undefined;
    const client = new RfbClient(
      { send: (b) => ws.send(b), close: () => ws.close() },
      new Promise((resolve) => (closedWith = resolve)),
    );
    // Listening before `open`: the server's first bytes may come in the same read as the 101.
    ws.on("message", (d: Buffer) => client.q.push(d));
    ws.on("close", (code, reason) => {
      client.q.fail(new Error(`socket closed ${code} ${reason}`));
      closedWith({ code, reason: reason.toString() });
    });
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("unexpected-response", (_req, res) => {
        reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode }));
        res.resume();
        ws.terminate();
      });
      ws.once("error", reject);
    });
    ws.on("error", () => undefined);
    return Object.assign(client, { ws });
  }

  static async overTcp(host: string, port: number): Promise<RfbClient> {
    const sock = net.connect({ host, port });
    sock.setNoDelay(true);
    let closedWith: (v: { code: number; reason: string }) => void = () => undefined;
    const client = new RfbClient(
      { send: (b) => sock.write(b), close: () => sock.destroy() },
      new Promise((resolve) => (closedWith = resolve)),
    );
    sock.on("data", (d) => client.q.push(d));
    sock.on("close", () => {
      client.q.fail(new Error("tcp closed"));
      closedWith({ code: 0, reason: "tcp closed" });
    });
    await new Promise<void>((resolve, reject) => {
      sock.once("connect", () => resolve());
      sock.once("error", reject);
    });
    sock.on("error", () => undefined);
    return client;
  }

  /**
   * ProtocolVersion 3.8, security None (the relay's) or, with `respond`, VNC authentication (a
   * box's x11vnc, reached directly: tests/support/box-auth.ts `vncResponder`), ClientInit
   * (shared as given), ServerInit, raw only.
   */
  async handshake(shared = 1, respond?: (challenge: Buffer) => Buffer, encodings: number[] = [0]): Promise<ServerInit> {
    const version = (await this.q.read(12)).toString("latin1");
    if (!version.startsWith("RFB 003.")) throw new Error(`not RFB: ${JSON.stringify(version)}`);
    this.t.send(Buffer.from("RFB 003.008\n", "latin1"));
    const n = (await this.q.read(1))[0]!;
    if (n === 0) throw new Error(`server refused: ${(await this.q.read((await this.q.read(4)).readUInt32BE(0))).toString()}`);
    const types = [...(await this.q.read(n))];
    if (respond) {
      if (!types.includes(2)) throw new Error(`no VNC authentication in ${types}`);
      this.t.send(Buffer.from([2]));
      this.t.send(respond(await this.q.read(16)));
    } else {
      if (!types.includes(1)) throw new Error(`no security type None in ${types}`);
      this.t.send(Buffer.from([1]));
    }
    const result = (await this.q.read(4)).readUInt32BE(0);
    if (result !== 0) throw new Error(`security result ${result}`);
    this.t.send(Buffer.from([shared]));
    const si = await this.q.read(24);
    const name = (await this.q.read(si.readUInt32BE(20))).toString("utf8");
    this.init = { width: si.readUInt16BE(0), height: si.readUInt16BE(2), bpp: si[4]!, name };
    // Encodings: raw only by default, so both paths carry the same bytes; ZRLE (16) for a
    // viewer that costs what noVNC's compressed updates cost.
    const enc = Buffer.alloc(4 + 4 * encodings.length);
    enc[0] = 2;
    enc.writeUInt16BE(encodings.length, 2);
    encodings.forEach((e, i) => enc.writeInt32BE(e, 4 + 4 * i));
    this.t.send(enc);
    return this.init;
  }

  requestUpdate(incremental = false, x = 0, y = 0, w = this.init.width, h = this.init.height) {
    const b = Buffer.alloc(10);
    b[0] = 3;
    b[1] = incremental ? 1 : 0;
    b.writeUInt16BE(x, 2);
    b.writeUInt16BE(y, 4);
    b.writeUInt16BE(w, 6);
    b.writeUInt16BE(h, 8);
    this.t.send(b);
  }

  /** Reads server messages until a FramebufferUpdate has been read whole. */
  async nextUpdate(): Promise<Update> {
    for (;;) {
      const at = await this.q.nextAt();
      const type = (await this.q.read(1))[0]!;
      if (type === 0) {
        const n = (await this.q.read(3)).readUInt16BE(1);
        const rects: Update["rects"] = [];
        let bytes = 4;
        for (let i = 0; i < n; i++) {
          const h = await this.q.read(12);
          const r = { x: h.readUInt16BE(0), y: h.readUInt16BE(2), w: h.readUInt16BE(4), h: h.readUInt16BE(6), encoding: h.readInt32BE(8) };
          bytes += 12;
          if (r.encoding === 0) {
            const size = r.w * r.h * (this.init.bpp / 8);
            await this.q.skip(size);
            bytes += size;
          } else if (r.encoding === 1) {
            await this.q.skip(4);
            bytes += 4;
          } else if (r.encoding === 16) {
            // ZRLE: a length, then that much zlib data (not decoded: only its size matters here).
            const len = (await this.q.read(4)).readUInt32BE(0);
            await this.q.skip(len);
            bytes += 4 + len;
          } else if (r.encoding === -224) {
            rects.push(r);
            break; // LastRect
          } else if (r.encoding !== -223) {
            throw new Error(`unexpected encoding ${r.encoding}`);
          }
          rects.push(r);
        }
        return { firstByteAt: at, rects, bytes };
      }
      if (type === 1) {
        const h = await this.q.read(5);
        await this.q.skip(6 * h.readUInt16BE(3));
      } else if (type === 2) {
        // Bell
      } else if (type === 3) {
        // A negative length is the extended clipboard (Caps, Notify, Provide…): |length| bytes.
        const len = (await this.q.read(7)).readInt32BE(3);
        const body = await this.q.read(Math.abs(len));
        if (len >= 0) this.cutTexts.push(body.toString("latin1"));
      } else {
        throw new Error(`unexpected server message ${type}`);
      }
    }
  }

  pointer(mask: number, x: number, y: number) {
    const b = Buffer.alloc(6);
    b[0] = 5;
    b[1] = mask;
    b.writeUInt16BE(x, 2);
    b.writeUInt16BE(y, 4);
    this.t.send(b);
  }

  key(down: boolean, keysym: number) {
    const b = Buffer.alloc(8);
    b[0] = 4;
    b[1] = down ? 1 : 0;
    b.writeUInt32BE(keysym, 4);
    this.t.send(b);
  }

  /** Types ASCII letters as key down/up pairs (their keysyms equal their codes). */
  type(text: string) {
    for (const c of text) {
      this.key(true, c.charCodeAt(0));
      this.key(false, c.charCodeAt(0));
    }
  }

  cut(text: string) {
    const t = Buffer.from(text, "latin1");
    const b = Buffer.alloc(8);
    b[0] = 6;
    b.writeUInt32BE(t.length, 4);
    this.t.send(Buffer.concat([b, t]));
  }

  raw(bytes: Buffer) {
    this.t.send(bytes);
  }

  close() {
    this.t.close();
  }
}

/** Asks the server for a viewer ticket. */
export async function viewerTicket(server: TestServer, boxId: string, screen = 0, body: Record<string, unknown> = {}) {
  const res = await server.api(`/v1/boxes/${boxId}/screens/${screen}/viewer/ticket`, { method: "POST", json: body });
  const out = await json(res);
  if (res.status !== 200) throw new Error(`ticket: ${res.status} ${JSON.stringify(out)}`);
  return out as { ticket: string; expires_at_ms: number; mode: string; view_socket: string; control_socket?: string };
}
