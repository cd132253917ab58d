import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import WebSocket from "ws";
import { type Person, consoleClient } from "../support/console";
import { type OwnRedis, type Relay, ownRedis, tcpRelay } from "../support/outage";
import { ADMIN_URL, createTestDatabase, databaseUrl, dropTestDatabases } from "../support/postgres";
import { RUN_LABEL, type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { type Api, apiAs } from "../support/workspaces";

// An open CDP socket's access checked again when it changes (docs/decisions/0011), and that check
// failing: server A reaches its store through a relay the test cuts, and a key is revoked on
// server B. A hears of it through Redis and cannot read the key: the socket closes 1008 all the
// same, and its place on the screen is given back (none may stay held, or the screen refuses
// everyone 503 after enough of them).

let redis: OwnRedis;
let relay: Relay;
let a: TestServer;
let b: TestServer;
let database: string;
let ada: Person;
let box: string;
const keys: { api: Api; id: string }[] = [];
const sockets: WebSocket[] = [];

beforeAll(async () => {
  database = await createTestDatabase(RUN_LABEL);
  redis = await ownRedis();
  const pgAddr = new URL(ADMIN_URL);
  relay = await tcpRelay({ host: pgAddr.hostname, port: Number(pgAddr.port || 5432) });
  const direct = databaseUrl(database);
  const relayed = new URL(direct);
  relayed.host = `127.0.0.1:${relay.port}`;
  const shared = {
    HOLM_STORAGE_BACKEND: "postgres",
    HOLM_REDIS_URL: redis.url,
    HOLM_SECRET_KEY: randomBytes(32).toString("hex"),
    HOLM_SERVER_TOKEN: randomBytes(24).toString("hex"),
    HOLM_CDP_SOCKETS_PER_SCREEN: "4",
  };
  a = await startServer({ ...shared, HOLM_DATABASE_URL: relayed.href });
  b = await startServer({ ...shared, HOLM_DATABASE_URL: direct });
  const c = consoleClient(a);
  ada = await c.signUp("ada@example.com", "A");
  for (const name of ["a", "b", "c"]) {
    const k = await c.createKey(ada, name);
    keys.push({ api: apiAs(a, k.secret), id: k.id });
  }
  const res = await keys[0]!.api("/v1/boxes", { method: "POST", json: {} });
  const created = await json(res);
  expect(res.status, JSON.stringify(created)).toBe(200);
  box = created.id;
}, 240_000);

afterAll(async () => {
  for (const ws of sockets) ws.terminate();
  await Promise.all([a?.stop("SIGKILL"), b?.stop("SIGKILL")]);
  await redis?.stop();
  await relay?.cut().catch(() => undefined);
  await removeTestBoxes();
  if (database) await dropTestDatabases([database]);
});

async function wsUrl(key: Api): Promise<string> {
  const res = await key(`/v1/boxes/${box}/cdp`, { method: "POST" });
  const out = await json(res);
  expect(res.status, JSON.stringify(out)).toBe(200);
  return out.ws_url;
}

/** Opens a CDP socket on A: the socket, or the status of the refused upgrade. */
function open(url: string): Promise<WebSocket | number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    ws.once("open", () => (sockets.push(ws), resolve(ws)));
    ws.once("unexpected-response", (_req, res) => (res.resume(), resolve(res.statusCode ?? 0)));
    ws.once("error", reject);
  });
}

it("an open socket whose access check throws (its server's store cut) closes 1008 and gives its place back", async () => {
  const [ka, kb, kc] = keys as [(typeof keys)[0], (typeof keys)[0], (typeof keys)[0]];
  const urlA = await wsUrl(ka.api);
  const urlB = await wsUrl(kb.api);
  const urlC = await wsUrl(kc.api);
  // The screen's four places: two of key a (its half), two of key b.
  const mine = [await open(urlA), await open(urlA)] as WebSocket[];
  for (const ws of mine) expect(ws).toBeInstanceOf(WebSocket);
  expect(await open(urlB)).toBeInstanceOf(WebSocket);
  expect(await open(urlB)).toBeInstanceOf(WebSocket);
  expect(await open(urlC)).toBe(503);
  const closed = mine.map((ws) => new Promise<[number, string]>((r) => ws.once("close", (code, why) => r([code, String(why)]))));
  await relay.cut();
  try {
    // Revoked on B, which reaches the store: A hears it through Redis and cannot read the key.
    const c = consoleClient(b);
    const csrf = c.csrfIn(await c.page(ada, "/keys"));
    expect((await c.form(ada, "/keys?index", { intent: "revoke", id: ka.id, csrf })).status).toBe(200);
    for (const end of await Promise.all(closed)) expect(end).toEqual([1008, expect.stringMatching(/could not be confirmed/)]);
  } finally {
    await relay.mend();
  }
  // Both places are free again: key c opens two sockets on the screen (it would be refused 503).
  expect(await open(urlC)).toBeInstanceOf(WebSocket);
  expect(await open(urlC)).toBeInstanceOf(WebSocket);
  expect(await open(urlC)).toBe(503);
}, 90_000);
