import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clusterEnv, type Proxy, roundRobinProxy } from "../support/cluster";
import { type Person, consoleClient } from "../support/console";
import { type OwnRedis, ownRedis } from "../support/outage";
import { createTestDatabase, dropTestDatabases } from "../support/postgres";
import { RUN_LABEL, type TestServer, freePort, startServer } from "../support/server";

// MCP behind a load balancer with no sticky sessions (README "Several servers", ADR 0021): a
// session opened on one server is answered by every server, with the SDK's own client through a
// round-robin proxy, and ends everywhere when its key is revoked or it is deleted. Its own Redis
// (stopped and restarted here: the shared test Redis serves other suites).

const WANTED = process.env.HOLM_TEST_REDIS !== "0" && process.env.HOLM_TEST_POSTGRES !== "0";

let a: TestServer;
let b: TestServer;
let proxy: Proxy;
let redis: OwnRedis;
let database: string;
let ada: Person;
let c: ReturnType<typeof consoleClient>;
/** A client of the cluster's Redis, to see what the servers keep and publish there. */
let store: Redis;
/** The MCP session records in Redis. */
const records = async () => new Set(await store.keys("holm:mcp:session:*"));

type ToolResult = { isError?: boolean; content: Array<{ type: string; text?: string }> };

const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } } };

/** A raw JSON-RPC POST to `server`'s /mcp. */
function post(server: { base: string }, secret: string, message: unknown, sid?: string, accept = "application/json, text/event-stream") {
  return fetch(`${server.base}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept,
      "mcp-protocol-version": "2025-11-25",
      authorization: `Bearer ${secret}`,
      ...(sid ? { "mcp-session-id": sid } : {}),
    },
    body: JSON.stringify(message),
  });
}

/** The JSON-RPC answer with `id` in an SSE (or JSON) response. */
async function answerOf(res: Response, id: number) {
  const text = await res.text();
  if (res.headers.get("content-type")?.includes("application/json")) return JSON.parse(text);
  for (const m of text.matchAll(/^data: ?(\S.*)$/gm)) {
    const msg = JSON.parse(m[1]!);
    if (msg.id === id) return msg;
  }
  throw new Error(`no answer ${id} in ${text.slice(0, 300)}`);
}

const list = (n: number) => ({ jsonrpc: "2.0", id: n, method: "tools/list" });
/** The status of an answer, read to its end. */
const statusOf = async (res: Promise<Response>) => {
  const r = await res;
  await r.text();
  return r.status;
};

/** Opens a session on `server` by hand; its id. */
async function openOn(server: { base: string }, secret: string): Promise<string> {
  const res = await post(server, secret, initialize);
  expect(res.status).toBe(200);
  const sid = res.headers.get("mcp-session-id")!;
  await answerOf(res, 1);
  expect((await post(server, secret, { jsonrpc: "2.0", method: "notifications/initialized" }, sid)).status).toBe(202);
  return sid;
}

beforeAll(async () => {
  if (!WANTED) return;
  redis = await ownRedis();
  database = await createTestDatabase(RUN_LABEL);
  const proxyPort = await freePort();
  const shared = clusterEnv(database, redis.url, {
    HOLM_PUBLIC_URL: `http://127.0.0.1:${proxyPort}`,
  });
  a = await startServer(shared);
  b = await startServer(shared);
  proxy = await roundRobinProxy(proxyPort, [a.base, b.base]);
  c = consoleClient(a);
  ada = await c.signUp("ada@example.com", "A");
  store = new Redis(redis.url);
  store.on("error", () => {}); // the outage test stops Redis: this client waits it out
}, 120_000);

afterAll(async () => {
  store?.disconnect();
  await proxy?.close();
  await Promise.all([a?.stop(), b?.stop()]);
  await redis?.stop();
  if (database) await dropTestDatabases([database]);
});

describe.runIf(WANTED)("MCP on two servers behind a round-robin proxy", () => {
  it("the SDK client connects, lists tools and calls a tool on each server in turn", async () => {
    const key = await c.createKey(ada, "agent");
    const transport = new StreamableHTTPClientTransport(new URL(`${proxy.base}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key.secret}` } },
    });
    const client = new Client({ name: "holm-test", version: "1.0.0" });
    await client.connect(transport);
    try {
      const before = [...proxy.served];
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain("list_boxes");
      for (let i = 0; i < 4; i++) {
        const r = (await client.callTool({ name: "list_boxes", arguments: {} })) as ToolResult;
        expect(r.isError, r.content[0]?.text).toBeFalsy();
        expect(JSON.parse(r.content[0]!.text!).boxes).toEqual([]);
      }
      // Both servers answered some of those.
      expect(proxy.served[0]! - before[0]!).toBeGreaterThan(0);
      expect(proxy.served[1]! - before[1]!).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
  });

  it("a person's answer to remove_box's question reaches the server that asked, whichever server it lands on", async () => {
    const key = await c.createKey(ada, "asker");
    const transport = new StreamableHTTPClientTransport(new URL(`${proxy.base}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key.secret}` } },
    });
    const client = new Client({ name: "holm-test", version: "1.0.0" }, { capabilities: { elicitation: {} } });
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params.message);
      return { action: "decline" };
    });
    await client.connect(transport);
    try {
      for (let i = 0; i < 4; i++) {
        // The call goes to one server, the answer to its question (a POST of its own) to the next.
        const r = (await client.callTool({ name: "remove_box", arguments: { box: `box_nothere${i}` } }, undefined, { timeout: 10_000 })) as ToolResult;
        expect(r.content[0]!.text).toBe(`denied: the person at the client declined removing box box_nothere${i}; it was not removed`);
      }
      expect(asked).toHaveLength(4);
    } finally {
      await client.close();
    }
  }, 60_000);

  it("a session opened on A is answered on B, for its own key only; deleted on B, it is gone on A", async () => {
    const key = await c.createKey(ada, "raw");
    const other = await c.createKey(ada, "other");
    const sid = await openOn(a, key.secret);
    const res = await post(b, key.secret, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "list_boxes", arguments: {} } }, sid);
    expect(res.status).toBe(200);
    const answer = await answerOf(res, 2);
    expect(answer.result.isError).toBeFalsy();
    expect(JSON.parse(answer.result.content[0].text).boxes).toEqual([]);
    // Another key of the same workspace: as if the session did not exist, on either server.
    for (const s of [a, b]) {
      const stolen = await post(s, other.secret, { jsonrpc: "2.0", id: 3, method: "tools/list" }, sid);
      expect(stolen.status).toBe(404);
      expect((await stolen.json()).error.message).toBe("Session not found");
    }
    const unknown = await post(b, key.secret, { jsonrpc: "2.0", id: 4, method: "tools/list" }, "00000000-0000-4000-8000-000000000000");
    expect(unknown.status).toBe(404);
    // DELETE on B ends it on A too.
    const del = await fetch(`${b.base}/mcp`, { method: "DELETE", headers: { authorization: `Bearer ${key.secret}`, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" } });
    expect(del.status).toBe(200);
    const gone = await post(a, key.secret, { jsonrpc: "2.0", id: 5, method: "tools/list" }, sid);
    expect(gone.status).toBe(404);
  });

  it("a key revoked on A: its session's stream on B closes and B refuses it", async () => {
    const doomed = await c.createKey(ada, "doomed");
    const sid = await openOn(a, doomed.secret);
    const stream = await fetch(`${b.base}/mcp`, {
      headers: { authorization: `Bearer ${doomed.secret}`, "mcp-session-id": sid, accept: "text/event-stream", "mcp-protocol-version": "2025-11-25" },
    });
    expect(stream.status).toBe(200);
    const csrf = c.csrfIn(await c.page(ada, "/keys"));
    expect((await c.form(ada, "/keys?index", { intent: "revoke", id: doomed.id, csrf })).status).toBe(200);
    // The stream on B ends (its reader sees the end within moments).
    const reader = stream.body!.getReader();
    const ended = await Promise.race([
      (async () => {
        for (;;) if ((await reader.read()).done) return true;
      })(),
      new Promise<false>((r) => setTimeout(() => r(false), 5000)),
    ]);
    await reader.cancel().catch(() => {});
    expect(ended).toBe(true);
    const after = await post(b, doomed.secret, { jsonrpc: "2.0", id: 2, method: "tools/list" }, sid);
    expect(after.status).toBe(401);
  });

  it("a client's answer is relayed to the other servers only when it is small and could answer a server's request", async () => {
    const key = await c.createKey(ada, "relay");
    const sid = await openOn(a, key.secret);
    const watcher = new Redis(redis.url);
    const heard: string[] = [];
    watcher.on("message", (_channel, raw: string) => heard.push(raw));
    await watcher.subscribe("holm:bus:mcp-answers");
    try {
      // A 3 MB answer (one key could send 96 MiB, enough to make Redis drop every server's
      // subscriber), and one whose id no server ever sends: both taken (202), neither relayed.
      const big = { jsonrpc: "2.0", id: 999, result: { x: "x".repeat(3_000_000) } };
      expect(await statusOf(post(b, key.secret, big, sid))).toBe(202);
      expect(await statusOf(post(b, key.secret, { jsonrpc: "2.0", id: "not-ours", result: {} }, sid))).toBe(202);
      // A small one is relayed, as a person's answer to remove_box's question is.
      expect(await statusOf(post(b, key.secret, { jsonrpc: "2.0", id: 1000, result: { action: "decline" } }, sid))).toBe(202);
      await expect.poll(() => heard.length, { timeout: 5000 }).toBeGreaterThan(0);
      await new Promise((r) => setTimeout(r, 200));
      expect(heard.map((m) => JSON.parse(m).payload.messages[0].id)).toEqual([1000]);
    } finally {
      watcher.disconnect();
    }
  });

  it("an initialize the SDK refuses leaves no session record behind", async () => {
    const key = await c.createKey(ada, "refused");
    const before = await records();
    // Refused by the SDK (406: the client must accept SSE too): no session, so no record.
    for (let i = 0; i < 3; i++) {
      const res = await post(a, key.secret, initialize, undefined, "application/json");
      expect(res.status).toBe(406);
      expect(res.headers.get("mcp-session-id")).toBeNull();
      await res.text();
    }
    expect([...(await records())].filter((k) => !before.has(k))).toEqual([]);
    // One that opens is recorded, with its initialize params, and answered on the other server.
    const sid = await openOn(a, key.secret);
    expect(JSON.parse((await store.get(`holm:mcp:session:${sid}`))!).init).toEqual(initialize.params);
    expect(await statusOf(post(b, key.secret, list(2), sid))).toBe(200);
  });

  it("an initialize over 16 KiB is refused as invalid params, and nothing is recorded", async () => {
    const key = await c.createKey(ada, "huge");
    const before = await records();
    const huge = { ...initialize, params: { ...initialize.params, clientInfo: { name: "n".repeat(1_000_000), version: "1" } } };
    const refused = await post(a, key.secret, huge);
    expect(refused.status).toBe(400);
    expect(refused.headers.get("mcp-session-id")).toBeNull();
    expect(await refused.json()).toEqual({
      jsonrpc: "2.0",
      id: 1,
      error: { code: -32602, message: expect.stringMatching(/^Invalid params: an initialize request may be at most 16384 bytes of JSON; this one is 1000\d{3}/) },
    });
    expect([...(await records())].filter((k) => !before.has(k))).toEqual([]);
  });

  it("with Redis away, a session answers on the servers holding a copy, opening one is 503 retryable; after Redis restarts empty, elsewhere is 404", async () => {
    const key = await c.createKey(ada, "outage");
    const both = await openOn(a, key.secret);
    expect(await statusOf(post(b, key.secret, list(2), both))).toBe(200);
    const onlyA = await openOn(a, key.secret);
    await redis.stop();
    try {
      expect(await statusOf(post(a, key.secret, list(3), both))).toBe(200);
      expect(await statusOf(post(b, key.secret, list(4), both))).toBe(200);
      expect(await statusOf(post(a, key.secret, list(5), onlyA))).toBe(200);
      const opening = await post(b, key.secret, initialize);
      expect(opening.status).toBe(503);
      expect(await opening.json()).toMatchObject({ code: "unavailable", retryable: true });
      const elsewhere = await post(b, key.secret, list(6), onlyA);
      expect(elsewhere.status).toBe(503);
      expect(await elsewhere.json()).toMatchObject({ code: "unavailable", retryable: true });
    } finally {
      await redis.start();
    }
    // The restarted Redis holds no record: B does not know the session A holds; A still does.
    await expect.poll(() => statusOf(post(b, key.secret, list(7), onlyA)), { timeout: 15_000 }).toBe(404);
    expect(await statusOf(post(a, key.secret, list(8), onlyA))).toBe(200);
  }, 60_000);
});
