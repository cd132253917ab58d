import net from "node:net";
import pg from "pg";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import WebSocket from "ws";
import { upgradeKeptOpen } from "../support/cdp";
import { type Person, consoleClient } from "../support/console";
import { peakRss } from "../support/http";
import { type TestServer, execIn, json, removeTestBoxes, startServer } from "../support/server";
import { until } from "../support/until";
import { type Api, apiAs } from "../support/workspaces";

// What a CDP socket may cost the server beyond the counts of cdp-limits.test.ts
// (docs/decisions/0011-cdp-proxy.md, "Limits"): a place is given back on every way a socket ends,
// a failed access check included, and the bytes every CDP socket holds waiting to be written are
// bounded together (HOLM_CDP_BUFFER_MIB): past it the socket holding the most is closed 1013.

const MiB = 1024 * 1024;
let server: TestServer;
let box: { id: string };
let ada: Person;
let c: ReturnType<typeof consoleClient>;
const keys: Api[] = [];
const sockets: WebSocket[] = [];

beforeAll(async () => {
  // PostgreSQL: the test takes a lock in it and ends the server's connection waiting on it, as a
  // store that goes away mid-query does.
  server = await startServer({
    HOLM_STORAGE_BACKEND: "postgres",
    HOLM_CDP_SOCKETS_PER_SCREEN: "16",
    HOLM_CDP_SOCKETS_PER_ISSUER: "6",
    // Small bounds, so that a box's one browser fills them within seconds.
    HOLM_CDP_MESSAGE_MIB: "8",
    HOLM_CDP_BUFFER_MIB: "16",
  });
  c = consoleClient(server);
  ada = await c.signUp("ada@example.com", "A");
  for (const name of ["a", "b", "c"]) keys.push(apiAs(server, (await c.createKey(ada, name)).secret));
  const res = await keys[0]!("/v1/boxes", { method: "POST", json: {} });
  box = await json(res);
  expect(res.status, JSON.stringify(box)).toBe(200);
}, 180_000);

afterAll(async () => {
  for (const ws of sockets) ws.terminate();
  await server?.stop();
  await removeTestBoxes();
});

async function mint(key: Api): Promise<{ url: string; ws_url: string }> {
  const res = await key(`/v1/boxes/${box.id}/cdp`, { method: "POST" });
  const out = await json(res);
  expect(res.status, JSON.stringify(out)).toBe(200);
  return out;
}

/** Opens a CDP socket: the socket, or the status of the refused upgrade. */
function open(url: string): Promise<WebSocket | number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 0 });
    ws.once("open", () => (sockets.push(ws), resolve(ws)));
    ws.once("unexpected-response", (_req, res) => (res.resume(), resolve(res.statusCode ?? 0)));
    ws.once("error", reject);
  });
}

function closeAll() {
  for (const ws of sockets.splice(0)) ws.terminate();
}

/** How many of `n` sockets to `url` open before one is refused. */
async function opened(url: string, n: number): Promise<number> {
  for (let i = 0; i < n; i++) if (!((await open(url)) instanceof WebSocket)) return i;
  return n;
}

/** DevTools connections open to screen 0's Chromium (127.0.0.1:9222) inside the box. */
async function devtoolsConnections(): Promise<number> {
  const { out } = await execIn(box.id, ["cat", "/proc/net/tcp"]);
  // rem_address port 2406 (9222), state 01 (established): the agent's side of each connection.
  return out.split("\n").filter((l) => /^\s*\d+: \S+ [0-9A-F]{8}:2406 01 /.test(l)).length;
}

it("an access check that fails as a socket opens (the store gone mid-query) gives its place back and leaves no DevTools connection open", async () => {
  const held: net.Socket[] = [];
  const admin = new pg.Client({ connectionString: (server.store as { url: string }).url });
  await admin.connect();
  try {
    const before = await devtoolsConnections();
    const { ws_url } = await mint(keys[0]!);
    // The box paused: the upgrade waits for it, its place taken.
    expect((await server.api(`/v1/boxes/${box.id}/pause`, { method: "POST" })).status).toBe(200);
    const answered = upgradeKeptOpen(ws_url, held);
    await new Promise((r) => setTimeout(r, 1000));
    // Access changes meanwhile (another key revoked): the socket checks its issuer's again before its 101.
    const doomed = await c.createKey(ada, "doomed");
    const csrf = c.csrfIn(await c.page(ada, "/keys"));
    expect((await c.form(ada, "/keys?index", { intent: "revoke", id: doomed.id, csrf })).status).toBe(200);
    // That check reads the key, and the store's connection is lost under it.
    await admin.query("BEGIN");
    await admin.query("LOCK TABLE api_key IN ACCESS EXCLUSIVE MODE");
    expect((await server.api(`/v1/boxes/${box.id}/resume`, { method: "POST" })).status).toBe(200);
    let early: number | undefined;
    void answered.then((s) => (early = s));
    // Every connection of the server's that waits for the locked table is ended, until the upgrade
    // is answered. Found by its lock, not its query's text: a statement being parsed (the extended
    // protocol) already waits for its table's lock while pg_stat_activity still shows the last one.
    const ended: number[] = [];
    const endWaiting = async () => {
      const { rows } = await admin.query(
        "SELECT DISTINCT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE a.datname = current_database() AND l.pid <> pg_backend_pid() AND NOT l.granted AND l.relation = 'api_key'::regclass",
      );
      for (const { pid } of rows) (ended.push(pid), await admin.query("SELECT pg_terminate_backend($1)", [pid]));
      return early;
    };
    await until("the upgrade answered", endWaiting, (s) => s !== undefined).catch((e) => {
      throw new Error(`${String(e).slice(0, 200)}\n${server.logs().split("\n").filter((l) => !/v1\/health|actions/.test(l)).slice(-30).join("\n")}`);
    });
    await admin.query("COMMIT");
    // What failed was the issuer's key, read again before the 101.
    expect(ended.length).toBeGreaterThan(0);
    // The client is refused and keeps its connection open, as a careless one may.
    const status = await answered;
    // Its place is free again: the key has all six of its places (HOLM_CDP_SOCKETS_PER_ISSUER).
    expect(await opened(ws_url, 6)).toBe(6);
    closeAll();
    // And the box's DevTools relay that had opened for it is closed too.
    await until("no DevTools connection left over", devtoolsConnections, (n) => n <= before, 10_000);
    // The refusal says the store could not be reached, retryable (not a 500).
    expect(status).toBe(503);
  } finally {
    for (const s of held) s.destroy();
    closeAll();
    await admin.query("ROLLBACK").catch(() => undefined);
    await admin.end();
  }
}, 90_000);

/** The page target's socket through the proxy. */
async function pageSocket(key: Api): Promise<WebSocket> {
  const { url } = await mint(key);
  const list = (await (await fetch(`${url}/json/list`)).json()) as { type: string; webSocketDebuggerUrl: string }[];
  const ws = await open(list.find((t) => t.type === "page")!.webSocketDebuggerUrl);
  if (!(ws instanceof WebSocket)) throw new Error(`refused: ${ws}`);
  return ws;
}

it("clients that stop reading while the page answers them megabytes: one is closed 1013 naming HOLM_CDP_BUFFER_MIB, another client on the screen works on", async () => {
  const { url } = await mint(keys[2]!);
  const live = await chromium.connectOverCDP(url);
  try {
    const page = live.contexts()[0]!.pages()[0]!;
    const before = peakRss(server.pid);
    // Six clients (two keys, three each) ask for 6 MiB answers and read none of them: each socket
    // alone holds at most 8 MiB waiting plus a message, but six of them 80 MiB and more.
    const slow = await Promise.all([0, 0, 0, 1, 1, 1].map((k) => pageSocket(keys[k]!)));
    for (const ws of slow) {
      ws.pause();
      for (let id = 1; id <= 8; id++) {
        ws.send(JSON.stringify({ id, method: "Runtime.evaluate", params: { expression: `'x'.repeat(${6 * MiB})`, returnByValue: true } }));
      }
    }
    // Meanwhile the reading client goes on, for as long as the box's browser takes to answer.
    for (let i = 0; i < 10; i++) {
      expect(await page.evaluate((n) => n + 1, i)).toBe(i + 1);
      await new Promise((r) => setTimeout(r, 2000));
    }
    expect((await page.screenshot()).length).toBeGreaterThan(1000);
    const grew = peakRss(server.pid) - before;
    // The slow clients read again: how each ended (or that it is still open, its answers read).
    const ends = await Promise.all(
      slow.map(
        (ws) =>
          new Promise<{ code: number | "open"; reason: string }>((resolve) => {
            const t = setTimeout(() => resolve({ code: "open", reason: "" }), 20_000);
            ws.once("close", (code, reason) => (clearTimeout(t), resolve({ code, reason: String(reason) })));
            ws.resume();
          }),
      ),
    );
    const closed = ends.filter((e) => e.code === 1013);
    expect(closed.length, `the slow clients: ${JSON.stringify(ends)}; the server grew by ${(grew / MiB).toFixed(0)} MiB`).toBeGreaterThan(0);
    for (const e of closed) expect(e.reason).toMatch(/MiB waited here unread.*HOLM_CDP_BUFFER_MIB/);
    // One closed and never read again is ended by the close handshake's timeout (30 s): 1006.
    for (const e of ends) expect([1013, 1006, "open"]).toContain(e.code);
    // The reading client still works after.
    expect(await page.evaluate(() => document.title)).toBe(await page.title());
  } finally {
    await live.close();
    closeAll();
  }
}, 180_000);

it("clients that write megabytes to a paused box: the server stays within HOLM_CDP_BUFFER_MIB, one furthest behind is closed 1013, another client on the screen works once the box resumes", async () => {
  const { url } = await mint(keys[2]!);
  const live = await chromium.connectOverCDP(url);
  const writers = await Promise.all([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2].map((k) => pageSocket(keys[k]!)));
  try {
    const page = live.contexts()[0]!.pages()[0]!;
    expect(await page.evaluate(() => 1 + 1)).toBe(2);
    expect((await server.api(`/v1/boxes/${box.id}/pause`, { method: "POST" })).status).toBe(200);
    const before = peakRss(server.pid);
    const ends = writers.map(
      (ws) => new Promise<{ code: number; reason: string }>((resolve) => ws.once("close", (code, reason) => resolve({ code, reason: String(reason) }))),
    );
    // Each sends 24 MiB of commands the paused browser cannot take: alone a socket holds at most
    // 8 MiB waiting plus a message, but twelve of them over 100 MiB.
    const command = JSON.stringify({ id: 1, method: "Runtime.evaluate", params: { expression: `'${"y".repeat(MiB)}'.length` } });
    for (const ws of writers) for (let i = 0; i < 24; i++) ws.send(command);
    await new Promise((r) => setTimeout(r, 5000));
    const grew = peakRss(server.pid) - before;
    const closed = (await Promise.all(ends.map((e) => Promise.race([e, new Promise<undefined>((r) => setTimeout(r, 100))])))).filter((e) => e !== undefined);
    // The budget (16 MiB), a message being read on each socket, and the heap's own give.
    expect(grew, `the server grew by ${(grew / MiB).toFixed(0)} MiB; closed: ${JSON.stringify(closed)}`).toBeLessThan(48 * MiB);
    expect(closed.length).toBeGreaterThan(0);
    for (const e of closed) expect(e).toEqual({ code: 1013, reason: expect.stringMatching(/HOLM_CDP_BUFFER_MIB/) });
    // The client on the same screen that sent nothing is still connected, and works once the box resumes.
    expect((await server.api(`/v1/boxes/${box.id}/resume`, { method: "POST" })).status).toBe(200);
    expect(await page.evaluate(() => 2 + 2)).toBe(4);
  } finally {
    await server.api(`/v1/boxes/${box.id}/resume`, { method: "POST" });
    await live.close();
    closeAll();
  }
}, 120_000);
