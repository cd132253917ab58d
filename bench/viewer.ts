import net from "node:net";
import WebSocket from "ws";
import { vncResponder } from "../tests/support/box-auth";
import { Page, boxIp } from "../tests/support/cdp";
import { type TestServer, json, removeTestBoxes, startServer } from "../tests/support/server";
import { now, summarize } from "./stats";

// The viewer relay (/v1/…/viewer/socket) against a direct TCP connection to the box's x11vnc, in
// the same run, on the same box: latency of a full FramebufferUpdateRequest to the first byte of
// its update, throughput of full updates of a changing screen, and ticket → first update.
// Also exports the minimal RFB client the integration tests use.

// ---------------------------------------------------------------- a minimal RFB client

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

// ---------------------------------------------------------------- the bench

const N = Number(process.env.BENCH_N ?? 50);
/**
 * Samples per side of the full-update latency. x11vnc answers on its own cycle, so one sample falls
 * anywhere in 0–60 ms: the median of 50 moves by ±4 ms from run to run (1.01–1.19× in runs of
 * one build), more than the goal's 10 % of 43 ms. 200 make that ±2 ms, for 40 s more.
 */
const N_LATENCY = Number(process.env.BENCH_N_LATENCY ?? Math.max(N, 200));

// A full-screen canvas repainted every frame, so every full update is new pixels.
const CHANGING = `<!doctype html><html><body style="margin:0;overflow:hidden">
<canvas id="c"></canvas><script>
const c = document.getElementById("c"); c.width = innerWidth; c.height = innerHeight;
const g = c.getContext("2d"); let n = 0;
(function draw() { n++;
  for (let i = 0; i < 40; i++) { g.fillStyle = "hsl(" + ((n * 7 + i * 9) % 360) + ",70%," + (30 + (i * 13 + n) % 40) + "%)";
    g.fillRect((i * 97 + n * 13) % innerWidth, (i * 53 + n * 7) % innerHeight, 300, 200); }
  requestAnimationFrame(draw); })();
</script></body></html>`;

const order = (): ("direct" | "relay")[] => (Math.random() < 0.5 ? ["direct", "relay"] : ["relay", "direct"]);

async function connectPair(server: TestServer, boxId: string, ip: string) {
  // Straight to x11vnc, which asks for the box's password as it does of the relay.
  const direct = await RfbClient.overTcp(ip, 5900);
  await direct.handshake(1, vncResponder(server, boxId));
  const t = await viewerTicket(server, boxId, 0, { mode: "view" });
  const relay = await RfbClient.overWebSocket(t.view_socket);
  await relay.handshake();
  return { direct, relay };
}

export async function benchViewer() {
  const server = await startServer();
  try {
    const box = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
    if (box.state !== "ready") throw new Error(`box did not start: ${JSON.stringify(box)}`);
    const ip = await boxIp(box.id);
    const page = await Page.open(server, box.id);
    const { direct, relay } = await connectPair(server, box.id, ip);
    const { width, height } = relay.init;
    console.log(`screen ${width}×${height}, ${relay.init.bpp} bpp, raw encoding`);

    // Latency on a still screen: a full request to the first byte of its update.
    await page.navigate("about:blank");
    await new Promise((r) => setTimeout(r, 500));
    const latency = { direct: [] as number[], relay: [] as number[] };
    // x11vnc answers on its own poll cycle: a random pause before each request keeps either side
    // from locking onto one phase of it.
    const once = async (c: RfbClient, w = width, h = height) => {
      await new Promise((r) => setTimeout(r, Math.random() * 60));
      const t0 = now();
      c.requestUpdate(false, 0, 0, w, h);
      const u = await c.nextUpdate();
      return u.firstByteAt - t0;
    };
    for (let i = 0; i < 5; i++) {
      await once(direct);
      await once(relay);
    }
    for (let i = 0; i < N_LATENCY; i++) {
      // Both in each round, in a random order: drift in the box's load, and x11vnc's state after
      // the other client's update, fall on both sides alike.
      for (const side of order()) latency[side].push(await once(side === "direct" ? direct : relay));
    }
    const ld = summarize("full update request → first byte, direct TCP", latency.direct);
    const lr = summarize("full update request → first byte, relay (ws)", latency.relay);
    const lRatio = lr.median / ld.median;
    console.log(`  latency ratio relay/direct ${lRatio.toFixed(2)}× (target ≤ 1.1×: ${lRatio <= 1.1 ? "met" : "missed"}; +${(lr.median - ld.median).toFixed(2)} ms)`);

    // The relay's own round trip: a 64×64 request, which x11vnc answers at once.
    const small = { direct: [] as number[], relay: [] as number[] };
    for (let i = 0; i < N; i++) {
      for (const side of order()) small[side].push(await once(side === "direct" ? direct : relay, 64, 64));
    }
    const sd = summarize("64×64 update request → first byte, direct TCP", small.direct);
    const sr = summarize("64×64 update request → first byte, relay (ws)", small.relay);
    console.log(`  the relay adds ${(sr.median - sd.median).toFixed(2)} ms to a round trip (median)`);

    // Throughput on a changing screen: back-to-back full, non-incremental updates.
    await page.navigate(`data:text/html;base64,${Buffer.from(CHANGING).toString("base64")}`);
    await new Promise((r) => setTimeout(r, 1500));
    const rate = { direct: [] as number[], relay: [] as number[] };
    const burst = async (c: RfbClient, n: number) => {
      const t0 = now();
      let bytes = 0;
      for (let i = 0; i < n; i++) {
        c.requestUpdate(false);
        bytes += (await c.nextUpdate()).bytes;
      }
      return bytes / 1e6 / ((now() - t0) / 1000);
    };
    await burst(direct, 3);
    await burst(relay, 3);
    // x11vnc sends a full update once a cycle (20–26 ms here, at 13–21 % of a core): a burst's
    // rate is set by where its requests fall in that cycle, and a side can lock onto a bad phase for
    // a whole burst (one run of 20 bursts: direct 220 MB/s, relay 153; in 3 s runs taking turns
    // both gave 150–190). 40 bursts a side; the page is given 1.5 s to settle first (x11vnc
    // stalled 2–4 s in the first seconds of the animation).
    for (let i = 0; i < Math.max(40, Math.round(N / 5)); i++) {
      for (const side of order()) rate[side].push(await burst(side === "direct" ? direct : relay, 5));
    }
    const td = summarize("full updates of a changing screen, direct TCP", rate.direct, "MB/s");
    const tr = summarize("full updates of a changing screen, relay (ws)", rate.relay, "MB/s");
    const tRatio = tr.median / td.median;
    console.log(`  throughput ratio relay/direct ${tRatio.toFixed(2)}× (target ≥ 0.9×: ${tRatio >= 0.9 ? "met" : "missed"})`);
    direct.close();
    relay.close();

    // Ticket → first full framebuffer update, through the relay, from nothing.
    const first: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t0 = now();
      const t = await viewerTicket(server, box.id, 0, { mode: "view" });
      const c = await RfbClient.overWebSocket(t.view_socket);
      await c.handshake();
      c.requestUpdate(false);
      await c.nextUpdate();
      first.push(now() - t0);
      c.close();
      await c.closed;
    }
    const f = summarize("ticket → first full update (relay)", first);
    console.log(`  target median ≤ 500 ms (${f.median <= 500 ? "met" : "missed"})`);
    page.close();
  } finally {
    await server.stop();
    await removeTestBoxes();
  }
}
