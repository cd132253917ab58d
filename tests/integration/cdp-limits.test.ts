import net from "node:net";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import WebSocket from "ws";
import { cdpSocket, upgradeKeptOpen } from "../support/cdp";
import { consoleClient } from "../support/console";
import { peakRss } from "../support/http";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { until } from "../support/until";
import { type Api, apiAs } from "../support/workspaces";

// What one key's CDP sockets may cost the server (docs/decisions/0011-cdp-proxy.md, "Limits"):
// a screen takes HOLM_CDP_SOCKETS_PER_SCREEN sockets, one issuer half of them, and one issuer
// HOLM_CDP_SOCKETS_PER_ISSUER across every box; past them an upgrade is refused 503 `unavailable`
// (retryable). One message is at most HOLM_CDP_MESSAGE_MIB each way, closed 1009 past it: four
// sockets asking Chromium for 120 MB answers once grew the server by 574 MiB.

const MiB = 1024 * 1024;
let server: TestServer;
let box: { id: string };
const keys: Api[] = [];
const sockets: WebSocket[] = [];

beforeAll(async () => {
  server = await startServer({ HOLM_CDP_SOCKETS_PER_SCREEN: "4", HOLM_CDP_SOCKETS_PER_ISSUER: "3" });
  const c = consoleClient(server);
  const ada = await c.signUp("ada@example.com", "A");
  for (const name of ["a", "b", "c"]) keys.push(apiAs(server, (await c.createKey(ada, name)).secret));
  const res = await keys[0]!("/v1/boxes", { method: "POST", json: { spec: { desktop: { screens: 2 } } } });
  box = await json(res);
  expect(res.status, JSON.stringify(box)).toBe(200);
}, 180_000);

afterAll(async () => {
  for (const ws of sockets) ws.terminate();
  await server?.stop();
  await removeTestBoxes();
});

/** A fresh token of `key` for `screen`: its browser socket's address and its /json address. */
async function mint(key: Api, screen = 0): Promise<{ url: string; ws_url: string }> {
  const res = await key(`/v1/boxes/${box.id}/cdp?screen=${screen}`, { method: "POST" });
  const out = await json(res);
  expect(res.status, JSON.stringify(out)).toBe(200);
  return out;
}

/** Opens a CDP socket: the socket, or the status and body of the refused upgrade. */
function open(url: string): Promise<WebSocket | { status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 0 });
    ws.once("open", () => (sockets.push(ws), resolve(ws)));
    ws.once("unexpected-response", (_req, res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text || "null") }));
    });
    ws.once("error", reject);
  });
}

async function closeAll() {
  for (const ws of sockets.splice(0)) {
    if (ws.readyState === WebSocket.CLOSED) continue;
    const closed = new Promise((r) => ws.once("close", r));
    ws.close();
    await closed;
  }
}

/** What a test compares: "open", or the refusal (a socket itself would print as pages of internals). */
const seen = (w: WebSocket | { status: number; body: any }) => (w instanceof WebSocket ? "open" : w);
const refused = (why: RegExp) => ({ status: 503, body: { code: "unavailable", retryable: true, message: expect.stringMatching(why) } });

it("one key gets half a screen's CDP places and HOLM_CDP_SOCKETS_PER_ISSUER in all, refused 503 past them, and a place again once one closes", async () => {
  const [a, b, c] = keys as [Api, Api, Api];
  const a0 = await mint(a);
  const first = await open(a0.ws_url);
  expect(first).toBeInstanceOf(WebSocket);
  expect(await open(a0.ws_url)).toBeInstanceOf(WebSocket);
  // The third of one key on one screen, with the same token or a new one, is refused.
  expect(seen(await open(a0.ws_url))).toMatchObject(refused(/issuer/));
  expect(seen(await open((await mint(a)).ws_url))).toMatchObject(refused(/issuer/));
  // Another key has its own places on the screen, until the screen is full.
  const b0 = await mint(b);
  expect(await open(b0.ws_url)).toBeInstanceOf(WebSocket);
  expect(await open(b0.ws_url)).toBeInstanceOf(WebSocket);
  expect(seen(await open((await mint(c)).ws_url))).toMatchObject(refused(/screen 0/));
  // Another screen has its own places, but one key's sockets are counted across the server.
  const a1 = await mint(a, 1);
  expect(await open(a1.ws_url)).toBeInstanceOf(WebSocket);
  expect(seen(await open(a1.ws_url))).toMatchObject(refused(/HOLM_CDP_SOCKETS_PER_ISSUER/));
  expect(await open((await mint(c, 1)).ws_url)).toBeInstanceOf(WebSocket);
  // The sockets open still work.
  const send = cdpSocket(first as WebSocket);
  expect((await send("Browser.getVersion")).result?.product).toMatch(/Chrom/);
  // One closes: its place is free again (for the same key, on the same screen).
  (first as WebSocket).close();
  const again = await until("a place once a socket closed", () => open(a0.ws_url), (w) => w instanceof WebSocket);
  expect(again).toBeInstanceOf(WebSocket);
  await closeAll();
  // Every place is given back when its socket closes: the key has all three again.
  const back = await until("a key's places back", () => open(a1.ws_url), (w) => w instanceof WebSocket);
  expect(back).toBeInstanceOf(WebSocket);
  expect(seen(await open(a0.ws_url))).toBe("open");
  expect(seen(await open(a0.ws_url))).toBe("open");
  await closeAll();
}, 120_000);

/** The page target's socket through the proxy (what connectOverCDP attaches to). */
async function pageSocket(key: Api, screen = 0): Promise<WebSocket> {
  const { url } = await mint(key, screen);
  const list = (await (await fetch(`${url}/json/list`)).json()) as { type: string; webSocketDebuggerUrl: string }[];
  const ws = await open(list.find((t) => t.type === "page")!.webSocketDebuggerUrl);
  if (!(ws instanceof WebSocket)) throw new Error(`refused: ${JSON.stringify(ws)}`);
  return ws;
}

/** How `ws` ended, or "open" if it did not within `ms`; the messages it got meanwhile are counted. */
function ending(ws: WebSocket, ms: number): Promise<{ code: number | "open"; reason: string; bytes: number }> {
  let bytes = 0;
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve({ code: "open", reason: "", bytes }), ms);
    // Past the bound and still open: the answer came through whole (no need to wait on).
    ws.on("message", (d: Buffer) => ((bytes += d.length) > 64 * MiB ? (clearTimeout(t), resolve({ code: "open", reason: "", bytes })) : undefined));
    ws.once("close", (code, reason) => (clearTimeout(t), resolve({ code, reason: String(reason), bytes })));
  });
}

it("a browser's answer over HOLM_CDP_MESSAGE_MIB closes the socket 1009 and does not grow the server; a client's message too; Playwright still screenshots", async () => {
  const before = peakRss(server.pid);
  // Four sockets (two keys) each asking Chromium for a 120 MB answer: once 574 MiB more server.
  // One after the other: they share the page's renderer, which builds each answer in the box.
  const askers = [...(await Promise.all([pageSocket(keys[0]!), pageSocket(keys[0]!), pageSocket(keys[1]!), pageSocket(keys[1]!)]))];
  const ended: Awaited<ReturnType<typeof ending>>[] = [];
  for (const ws of askers) {
    const end = ending(ws, 90_000);
    ws.send(JSON.stringify({ id: 1, method: "Runtime.evaluate", params: { expression: `'a'.repeat(${120 * MiB})`, returnByValue: true } }));
    ended.push(await end);
  }
  const grew = peakRss(server.pid) - before;
  expect(grew, `the server grew by ${(grew / MiB).toFixed(0)} MiB`).toBeLessThan(96 * MiB);
  for (const e of ended) {
    expect(e.code, `the socket got ${(e.bytes / MiB).toFixed(0)} MiB`).toBe(1009);
    expect(e.reason).toMatch(/MiB/);
    expect(e.bytes).toBeLessThan(MiB);
  }

  // The other way: a client's 40 MiB command is refused the same way, before Chromium sees it.
  // (On screen 1: the four above give their places back as their TCP connections end.)
  const big = await pageSocket(keys[2]!, 1);
  const bigEnd = ending(big, 30_000);
  big.send(JSON.stringify({ id: 1, method: "Runtime.evaluate", params: { expression: `'${"b".repeat(40 * MiB)}'.length` } }));
  expect((await bigEnd).code).toBe(1009);
  await closeAll();

  // What Playwright does through the proxy goes on: a viewport screenshot and an 8 MB evaluation.
  const { url } = await mint(keys[2]!, 1);
  const browser = await chromium.connectOverCDP(url);
  try {
    const page = browser.contexts()[0]!.pages()[0]!;
    expect((await page.screenshot()).length).toBeGreaterThan(1000);
    expect(await page.evaluate(() => "c".repeat(8 * 1024 * 1024).length)).toBe(8 * 1024 * 1024);
    expect((await page.evaluate(() => "d".repeat(8 * 1024 * 1024))).length).toBe(8 * 1024 * 1024);
  } finally {
    await browser.close();
  }
}, 480_000);

it("a refused upgrade gives its place back at once, even while its client keeps the connection open", async () => {
  const c = keys[2]!;
  const held: net.Socket[] = [];
  try {
    const { ws_url } = await mint(c, 1);
    // A target the box's browser does not have: refused (502) after the place was taken.
    const gone = ws_url.replace(/\/devtools\/browser\/[^/]+$/, "/devtools/page/NOPE");
    for (let i = 0; i < 4; i++) expect(await upgradeKeptOpen(gone, held)).toBeGreaterThanOrEqual(400);
    // Those four held every place the key has (two on the screen, three in all) had they kept them.
    expect(seen(await open(ws_url))).toBe("open");
    expect(seen(await open(ws_url))).toBe("open");
  } finally {
    for (const s of held) s.destroy();
    await closeAll();
  }
}, 60_000);

/**
 * A client whose machine went away (slept, lost its network, a sandbox frozen and thrown away): its
 * upgrade went through, then nothing more comes on the connection, not even a close, and nothing
 * on it answers. Kept in `held` (the test's end destroys it).
 */
function vanishedClient(wsUrl: string, held: net.Socket[]): Promise<number> {
  const url = new URL(wsUrl);
  return new Promise((resolve, reject) => {
    const s = net.connect({ port: Number(url.port), host: url.hostname }, () =>
      s.write(`GET ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`),
    );
    held.push(s);
    s.once("data", (d) => (s.pause(), resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(String(d))?.[1] ?? 0))));
    s.once("error", reject);
  });
}

it("sockets whose clients vanished without closing give their places back within a minute or so; a live client's socket stays open", async () => {
  const [, b, c] = keys as [Api, Api, Api];
  const held: net.Socket[] = [];
  try {
    // A live client (ws answers the server's pings, as Playwright's and Puppeteer's do).
    const live = await open((await mint(b, 1)).ws_url);
    expect(live).toBeInstanceOf(WebSocket);
    const { ws_url } = await mint(c, 1);
    // Key c's two places on screen 1, taken by connections that then went silent for good.
    for (let i = 0; i < 2; i++) expect(await vanishedClient(ws_url, held)).toBe(101);
    expect(seen(await open(ws_url))).toMatchObject(refused(/issuer/));
    // Once the server notices they are gone, the key connects again (not for the token's hour).
    const again = await until(
      "key c's place back after its clients vanished",
      async () => (await new Promise((r) => setTimeout(r, 1000)), open(ws_url)),
      (w) => w instanceof WebSocket,
      90_000,
    );
    expect(again).toBeInstanceOf(WebSocket);
    // The live one lived through the same minute and still answers.
    expect((live as WebSocket).readyState).toBe(WebSocket.OPEN);
    expect((await cdpSocket(live as WebSocket)("Browser.getVersion")).result?.product).toMatch(/Chrom/);
  } finally {
    for (const s of held) s.destroy();
    await closeAll();
  }
}, 150_000);
