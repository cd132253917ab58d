// Chromium's DevTools on 127.0.0.1: the HTTP endpoints (/json/…) and a minimal WebSocket client
// for one target's CDP session (Node 18 has no global WebSocket). Chromium refuses a Host header
// that is not an IP or localhost (500) and a WebSocket that carries an Origin (403): this sends
// `Host: 127.0.0.1:<port>` and never an Origin.
import http from "node:http";
import crypto from "node:crypto";
import type { Socket } from "node:net";
import { AgentError } from "./errors";

const HOST = "127.0.0.1";
const httpAgent = new http.Agent({ keepAlive: true, maxSockets: 4 });

export interface CdpTarget {
  id: string;
  type: string;
  url: string;
  title: string;
  webSocketDebuggerUrl?: string;
}

/**
 * One request to the DevTools HTTP server: status and body text. Refused → `screen_unavailable`:
 * no browser listens there now (the box's entrypoint starts one that quit again, after a pause
 * when it quit over and over), which a later try may find back; silent → `failed`.
 */
export function cdpHttp(port: number, method: string, path: string, timeoutMs = 5000): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: HOST, port, method, path, agent: httpAgent, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", reject);
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
    });
    req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", (err: NodeJS.ErrnoException) =>
      reject(new AgentError(err.code === "ECONNREFUSED" ? "screen_unavailable" : "failed", `Chromium's DevTools on ${HOST}:${port} does not answer: ${err.message}`)),
    );
    req.end();
  });
}

/** `GET /json/list`, in Chromium's order (most recently activated first). */
export async function listTargets(port: number, timeoutMs = 5000): Promise<CdpTarget[]> {
  const r = await cdpHttp(port, "GET", "/json/list", timeoutMs);
  if (r.status !== 200) throw new AgentError("failed", `DevTools /json/list answered ${r.status}: ${r.text.slice(0, 200)}`);
  const list = JSON.parse(r.text) as unknown;
  if (!Array.isArray(list)) throw new AgentError("failed", "DevTools /json/list is not a list");
  return (list as CdpTarget[]).map((t) => (typeof t.title === "string" ? { ...t, title: unescapeTitle(t.title) } : t));
}

// DevTools' HTTP list sends each title through base::EscapeForHTML (for its own HTML listing):
// a page titled `Ada's` came out as `Ada&#39;s` in every tab list. Those five, in one pass, so
// `&amp;lt;` (a title that says `&lt;`) stays `&lt;`.
const TITLE_ESCAPES: Record<string, string> = { "&lt;": "<", "&gt;": ">", "&amp;": "&", "&quot;": '"', "&#39;": "'" };
const unescapeTitle = (title: string): string => title.replace(/&(?:lt|gt|amp|quot|#39);/g, (e) => TITLE_ESCAPES[e]!);

/** An error answer from Chromium to one command (the session itself is fine). */
export class CdpError extends AgentError {}

const WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

interface Pending {
  resolve: (v: Record<string, unknown>) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * A CDP session over a WebSocket: text frames, masked as a client must, fragments, ping/pong and
 * close. Enough for request/response; events are read and dropped.
 */
export class CdpSocket {
  /** Bytes received and not yet parsed, joined only once a whole frame (`need` bytes) is there. */
  private chunks: Buffer[] = [];
  private have = 0;
  private need = 2;
  private fragments: Buffer[] = [];
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private closedWith: Error | null = null;

  private constructor(private readonly sock: Socket) {
    sock.setNoDelay(true);
    sock.on("data", (d: Buffer) => this.onData(d));
    sock.on("error", (e) => this.fail(e));
    sock.on("close", () => this.fail(new Error("the DevTools socket closed")));
  }

  /** Opens `ws://127.0.0.1:<port><path>` (the path of a target's webSocketDebuggerUrl). */
  static connect(port: number, path: string, timeoutMs = 5000): Promise<CdpSocket> {
    const key = crypto.randomBytes(16).toString("base64");
    return new Promise((resolve, reject) => {
      const req = http.request({
        host: HOST, port, path, method: "GET", agent: false, timeout: timeoutMs,
        headers: { Connection: "Upgrade", Upgrade: "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": key },
      });
      req.on("timeout", () => req.destroy(new Error(`no WebSocket handshake within ${timeoutMs} ms`)));
      req.on("error", (err) => reject(new AgentError("failed", `DevTools WebSocket ${path}: ${err.message}`)));
      req.on("response", (res) => {
        res.resume();
        reject(new AgentError("failed", `DevTools WebSocket ${path} answered ${res.statusCode} instead of upgrading`));
      });
      req.on("upgrade", (res, sock, head) => {
        const want = crypto.createHash("sha1").update(key + WS_GUID).digest("base64");
        if (res.headers["sec-websocket-accept"] !== want) {
          sock.destroy();
          reject(new AgentError("failed", "DevTools WebSocket handshake has a wrong Sec-WebSocket-Accept"));
          return;
        }
        sock.setTimeout(0);
        const ws = new CdpSocket(sock);
        if (head.length) ws.onData(head);
        resolve(ws);
      });
      req.end();
    });
  }

  /** Sends one CDP command and resolves with its `result`; a CDP error or the timeout rejects. */
  send<T = Record<string, unknown>>(method: string, params: Record<string, unknown> = {}, timeoutMs = 5000): Promise<T> {
    if (this.closedWith) return Promise.reject(new AgentError("failed", `${method}: ${this.closedWith.message}`));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new AgentError("timeout", `${method} had no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { resolve: resolve as (v: Record<string, unknown>) => void, reject, timer });
      this.frame(0x1, Buffer.from(JSON.stringify({ id, method, params })));
    });
  }

  close(): void {
    if (!this.closedWith) {
      try {
        this.frame(0x8, Buffer.from([0x03, 0xe8])); // 1000, normal closure
      } catch {
        // the socket is already gone
      }
    }
    this.fail(new Error("closed"));
    this.sock.end();
    setTimeout(() => this.sock.destroy(), 200).unref();
  }

  private fail(err: Error): void {
    if (!this.closedWith) this.closedWith = err;
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      this.pending.delete(id);
      p.reject(new AgentError("failed", `DevTools: ${err.message}`));
    }
  }

  /** Writes one final frame with a fresh mask (RFC 6455 §5.3: every client frame is masked). */
  private frame(opcode: number, payload: Buffer): void {
    const len = payload.length;
    const head = Buffer.alloc(len < 126 ? 2 : len < 65536 ? 4 : 10);
    head[0] = 0x80 | opcode;
    if (len < 126) head[1] = 0x80 | len;
    else if (len < 65536) {
      head[1] = 0x80 | 126;
      head.writeUInt16BE(len, 2);
    } else {
      head[1] = 0x80 | 127;
      head.writeBigUInt64BE(BigInt(len), 2);
    }
    const mask = crypto.randomBytes(4);
    const body = Buffer.allocUnsafe(len);
    for (let i = 0; i < len; i++) body[i] = payload[i] ^ mask[i & 3];
    this.sock.write(Buffer.concat([head, mask, body]));
  }

  private onData(d: Buffer): void {
    this.chunks.push(d);
    this.have += d.length;
    if (this.have < this.need) return;
    let buf = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
    for (;;) {
      const next = this.parse(buf);
      if (typeof next === "number") {
        this.chunks = buf.length ? [buf] : [];
        this.have = buf.length;
        this.need = next;
        return;
      }
      buf = next;
    }
  }

  /** Handles the first frame of `buf` and returns the rest, or the byte count a whole frame needs. */
  private parse(buf: Buffer): Buffer | number {
    if (buf.length < 2) return 2;
    const fin = (buf[0] & 0x80) !== 0;
    const opcode = buf[0] & 0x0f;
    const masked = (buf[1] & 0x80) !== 0;
    let len = buf[1] & 0x7f;
    let off = 2;
    if (len === 126) {
      if (buf.length < 4) return 4;
      len = buf.readUInt16BE(2);
      off = 4;
    } else if (len === 127) {
      if (buf.length < 10) return 10;
      len = Number(buf.readBigUInt64BE(2));
      off = 10;
    }
    const maskAt = off;
    if (masked) off += 4;
    if (buf.length < off + len) return off + len;
    let payload = buf.subarray(off, off + len);
    if (masked) {
      const m = buf.subarray(maskAt, maskAt + 4);
      payload = Buffer.from(payload.map((b, i) => b ^ m[i & 3]));
    }
    if (opcode === 0x8) {
      this.fail(new Error("Chromium closed the DevTools socket"));
      this.sock.end();
      return 2 ** 53; // nothing more is read
    }
    if (opcode === 0x9) this.frame(0xa, Buffer.from(payload));
    else if (opcode === 0x0 || opcode === 0x1 || opcode === 0x2) {
      this.fragments.push(Buffer.from(payload));
      if (fin) {
        const text = Buffer.concat(this.fragments).toString("utf8");
        this.fragments = [];
        this.onMessage(text);
      }
    }
    return buf.subarray(off + len);
  }

  private onMessage(text: string): void {
    let msg: { id?: number; result?: Record<string, unknown>; error?: { message?: string } };
    try {
      msg = JSON.parse(text) as typeof msg;
    } catch {
      return;
    }
    if (typeof msg.id !== "number") return; // an event
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    clearTimeout(p.timer);
    if (msg.error) p.reject(new CdpError("failed", `CDP: ${msg.error.message ?? JSON.stringify(msg.error)}`));
    else p.resolve(msg.result ?? {});
  }
}
