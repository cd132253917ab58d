import type { Socket } from "socket.io-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { consoleClient } from "../support/console";
import { peakRss } from "../support/http";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { openIo } from "../support/sockets";
import { type Api, apiAs } from "../support/workspaces";

// A socket whose far side does not read must not fill the server's memory: a CDP socket sending
// to a paused box, a CDP client that reads none of the proxy's own answers during a takeover, and
// a console terminal flooding a shell that reads nothing (a security review found the first and
// the last growing the server by a gigabyte, held after the socket closed). Each test offers a
// few hundred MB and checks the server's peak resident memory (VmHWM) grew by far less.

const MiB = 1024 * 1024;
/** What a flood may add to the server's peak memory (its buffers are a few MiB; the rest is slack). */
const BOUND = 64 * MiB;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let server: TestServer;
let asA: Api;
let ada: { cookie: string };
let box: { id: string };

beforeAll(async () => {
  server = await startServer();
  const c = consoleClient(server);
  ada = await c.signUp("ada@example.com", "A");
  asA = apiAs(server, (await c.createKey(ada, "a")).secret);
  box = await json(await asA("/v1/boxes", { method: "POST", json: {} }));
  expect((box as { state?: string }).state, JSON.stringify(box)).toBe("ready");
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

/**
 * Offers `total` bytes in messages through `send`, as fast as the connection takes them (the
 * test's own queue kept under 16 MiB), for at most `ms`. Returns what was handed to the socket.
 */
async function flood(total: number, ms: number, queued: () => number, send: () => boolean, size: number): Promise<number> {
  const deadline = Date.now() + ms;
  let sent = 0;
  while (sent < total && Date.now() < deadline) {
    if (queued() > 16 * MiB) {
      await sleep(5);
      continue;
    }
    if (!send()) break;
    sent += size;
  }
  return sent;
}

/**
 * Offers 512 MiB of `msg` over a raw WebSocket (a CDP socket) for at most 20 s, then a second for
 * the server to settle, and expects its memory to have grown by less than BOUND.
 */
async function floodBounded(ws: WebSocket, msg: Buffer): Promise<void> {
  const before = peakRss(server.pid);
  const sent = await flood(
    512 * MiB,
    20_000,
    () => ws.bufferedAmount,
    () => (ws.readyState === WebSocket.OPEN ? (ws.send(msg, { binary: false }), true) : false),
    msg.length,
  );
  await sleep(1000);
  const grew = peakRss(server.pid) - before;
  expect(grew, `the server grew by ${(grew / MiB).toFixed(0)} MiB while ${(sent / MiB).toFixed(0)} MiB were offered`).toBeLessThan(BOUND);
}

describe("a socket whose far side stops reading", () => {
  it("CDP: a flood into a paused box's browser does not grow the server's memory; the socket works again after resume", async () => {
    const cdp = await json(await asA(`/v1/boxes/${box.id}/cdp`, { method: "POST" }));
    expect(cdp.ws_url, JSON.stringify(cdp)).toBeTruthy();
    // A page target: Page.captureScreenshot answers there (a big message the other way).
    const targets = await (await fetch(`${cdp.url}/json/list`)).json();
    const target = targets.find((t: { type: string }) => t.type === "page");
    const ws = new WebSocket(target.webSocketDebuggerUrl, { perMessageDeflate: false });
    await new Promise((resolve, reject) => (ws.once("open", resolve), ws.once("error", reject)));
    const replies = new Map<number, { result?: { data?: string; result?: { value?: unknown } } }>();
    ws.on("message", (d) => {
      const m = JSON.parse(String(d));
      if (typeof m.id === "number") replies.set(m.id, m);
    });
    const reply = async (id: number, ms = 60_000) => {
      const deadline = Date.now() + ms;
      while (!replies.has(id) && Date.now() < deadline) await sleep(20);
      return replies.get(id);
    };
    const closed = new Promise<number>((resolve) => ws.once("close", (code) => resolve(code)));

    expect((await asA(`/v1/boxes/${box.id}/pause`, { method: "POST" })).status).toBe(200);
    const size = 4 * MiB;
    const msg = Buffer.from(`{"id":1,"method":"Runtime.evaluate","params":{"expression":"'${"a".repeat(size - 80)}'.length"}}`);
    await floodBounded(ws, msg);

    // Paused boxes keep their CDP sockets: after resume what was held goes through, and the
    // socket answers as before, a screenshot (megabytes back) included.
    expect((await asA(`/v1/boxes/${box.id}/resume`, { method: "POST" })).status).toBe(200);
    ws.send(JSON.stringify({ id: 2, method: "Runtime.evaluate", params: { expression: "6*7" } }));
    expect((await reply(2))?.result?.result?.value).toBe(42);
    ws.send(JSON.stringify({ id: 3, method: "Page.captureScreenshot", params: { format: "png" } }));
    expect((await reply(3))?.result?.data?.length).toBeGreaterThan(1000);
    ws.close(1000);
    expect(await closed).toBe(1000);
  }, 180_000);

  it("terminal: flooding a shell that reads nothing ends the terminal with a reason; the server's memory stays put", async () => {
    // Running (a failed test before may have left it paused).
    await asA(`/v1/boxes/${box.id}/resume`, { method: "POST" });
    const t = await openIo(server, "/terminal", ada.cookie, { box: box.id });
    expect(typeof t, String(t)).not.toBe("string");
    if (typeof t === "string") return;
    const socket = t.socket as Socket & { io: { engine: { writeBuffer: unknown[]; transport: { ws?: WebSocket } } } };
    socket.emit("data", "stty -icanon -echo; sleep 600\n");
    await sleep(1500);
    const chunk = Buffer.alloc(900 * 1024, "a");
    const before = peakRss(server.pid);
    const sent = await flood(
      512 * MiB,
      30_000,
      () => socket.io.engine.writeBuffer.length * chunk.length + (socket.io.engine.transport.ws?.bufferedAmount ?? 0),
      () => (socket.connected ? (socket.emit("data", chunk), true) : false),
      chunk.length,
    );
    const end = await Promise.race([t.closed, sleep(10_000).then(() => undefined)]);
    const grew = peakRss(server.pid) - before;
    t.close();
    expect(grew, `the server grew by ${(grew / MiB).toFixed(0)} MiB while ${(sent / MiB).toFixed(0)} MiB were offered`).toBeLessThan(BOUND);
    expect(end?.reason).toMatch(/input/);
    // The server and the box go on: a new terminal opens.
    const again = await openIo(server, "/terminal", ada.cookie, { box: box.id });
    expect(typeof again, String(again)).not.toBe("string");
    if (typeof again !== "string") again.close();
  }, 180_000);

  it("CDP during a takeover: a client that sends refused commands and never reads the answers does not grow the server's memory; it is answered once it reads", async () => {
    await asA(`/v1/boxes/${box.id}/resume`, { method: "POST" });
    const cdp = await json(await asA(`/v1/boxes/${box.id}/cdp`, { method: "POST" }));
    expect(cdp.ws_url, JSON.stringify(cdp)).toBeTruthy();
    const takeover = `/v1/boxes/${box.id}/screens/0/takeover`;
    const ws = new WebSocket(cdp.ws_url, { perMessageDeflate: false, maxPayload: 0 });
    await new Promise((resolve, reject) => (ws.once("open", resolve), ws.once("error", reject)));
    let answered = 0;
    const version = new Promise<string>((resolve) =>
      ws.on("message", (d) => {
        const m = JSON.parse(String(d));
        if (m.id === 1) resolve(m.result?.product);
        else answered++;
      }),
    );
    try {
      expect((await server.api(takeover, { method: "POST", json: { shared: false } })).status).toBe(200);
      // The proxy answers each refused command itself, echoing its id (as Chromium does): 4 MiB
      // ids make 4 MiB answers, written to a client that reads nothing.
      ws.pause();
      const size = 4 * MiB;
      const msg = Buffer.from(`{"id":"${"a".repeat(size - 60)}","method":"Input.dispatchKeyEvent"}`);
      await floodBounded(ws, msg);
      // Once the client reads, what it sent is answered, and the socket works as before.
      ws.resume();
      ws.send(JSON.stringify({ id: 1, method: "Browser.getVersion" }));
      expect(await Promise.race([version, sleep(60_000).then(() => "no answer")])).toMatch(/Chrom/);
      expect(answered).toBeGreaterThan(0);
    } finally {
      ws.terminate();
      await server.api(takeover, { method: "DELETE" });
    }
  }, 180_000);
});
