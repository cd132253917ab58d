import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, startServer } from "../support/server";
import { openStore } from "../support/store";
import { type Api, twoWorkspaces } from "../support/workspaces";

// Webhook receivers that never answer, or answer and never finish (docs/decisions/0018), against
// real server processes and real receivers on 127.0.0.1. One workspace's hanging receivers (an
// attacker's server needs no setting to accept and stay silent) must not hold up another
// workspace's deliveries: sending is shared fairly (one attempt per webhook, two per workspace,
// a free slot takes the next due row at once), with the loop and with HOLM_SERVER_SCHEDULE=external.
// And a 2xx whose body never ends is delivered, not retried as "no answer".

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, get: () => T | Promise<T>, ok: (v: T) => boolean, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  let v = await get();
  while (!ok(v)) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms; last: ${JSON.stringify(v)}`);
    await sleep(50);
    v = await get();
  }
  return v;
}

/** Accepts each request and never answers; counts requests open at once, per path prefix. */
function hangingReceiver() {
  const open = new Set<http.IncomingMessage>();
  let most = 0;
  let seen = 0;
  const server = http.createServer((req) => {
    seen++;
    open.add(req);
    most = Math.max(most, open.size);
    req.socket.on("close", () => open.delete(req));
  });
  return { server, seen: () => seen, most: () => most };
}

/** Answers 200 at once, or on `/partial` a 200 head and a first chunk, and never the end. */
function answeringReceiver() {
  const got: { path: string; at: number }[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      got.push({ path: req.url ?? "", at: Date.now() });
      if (req.url === "/partial") {
        res.writeHead(200, { "content-type": "text/plain" });
        res.write("accepted, and more to come");
        return;
      }
      res.end("ok");
    });
  });
  return { server, got };
}

const listen = (s: http.Server) => new Promise<string>((r) => s.listen(0, "127.0.0.1", () => r(`http://127.0.0.1:${(s.address() as AddressInfo).port}`)));
/** Stops listening and drops every open connection: the server's attempts end at once. */
const shut = (s: http.Server) => new Promise<void>((r) => {
  s.close(() => r());
  s.closeAllConnections();
});

/** An event of the webhook's workspace, written into the server's store as another process would. */
function insertEvent(s: TestServer, webhookId: string, kind: string) {
  const db = openStore(s);
  db.pragma("busy_timeout = 5000");
  const { owner } = db.prepare("select owner from webhook where id = ?").get(webhookId) as { owner: string };
  db.prepare("insert into event (at_ms, kind, owner, box_id, data_json) values (?, ?, ?, ?, ?)").run(Date.now(), kind, owner, `box_${randomBytes(16).toString("hex")}`, JSON.stringify({ by: "server", by_name: "holm" }));
  db.close();
}

async function create(api: Api, url: string, events: string[]): Promise<{ id: string }> {
  const res = await api("/v1/webhooks", { method: "POST", json: { url, events } });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return JSON.parse(text);
}

/** Workspace A: 20 webhooks to a receiver that never answers, and 2 events each gets (40 deliveries). */
async function floodFromA(s: TestServer, asA: Api, hangBase: string) {
  const hooks: { id: string }[] = [];
  for (let i = 0; i < 20; i++) hooks.push(await create(asA, `${hangBase}/a${i}`, ["box.paused", "box.stopped"]));
  insertEvent(s, hooks[0]!.id, "box.paused");
  insertEvent(s, hooks[0]!.id, "box.stopped");
}

describe("webhook sending is shared fairly between workspaces (the server's loop)", () => {
  let server: TestServer;
  let asA: Api;
  let asB: Api;
  const hang = hangingReceiver();
  const rx = answeringReceiver();
  let hangBase = "";
  let rxBase = "";

  beforeAll(async () => {
    hangBase = await listen(hang.server);
    rxBase = await listen(rx.server);
    server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_WEBHOOK_ALLOW_PRIVATE: "1" });
    ({ asA, asB } = await twoWorkspaces(server));
  });

  afterAll(async () => {
    await Promise.all([shut(hang.server), shut(rx.server)]);
    await server?.stop();
  });

  it("a 200 whose body never ends is delivered with its status, not retried as no answer", async () => {
    const b = await create(asB, `${rxBase}/partial`, ["box.stopped"]);
    insertEvent(server, b.id, "box.stopped");
    const log = await until(
      "the delivery ends",
      async () => ((await (await asB(`/v1/webhooks/${b.id}/deliveries`)).json()) as { deliveries: any[] }).deliveries,
      (l) => (l[0]?.attempts ?? 0) >= 1,
      12_000,
    );
    // Before: "no answer within 10000 ms" after 10 s, no status kept, and retried.
    expect(log[0]).toMatchObject({ status: "delivered", attempts: 1, last_status: 200, error: null });
    expect(rx.got.filter((g) => g.path === "/partial")).toHaveLength(1);
  });

  it("while workspace A's 20 receivers hang, workspace B's new delivery arrives within 2 s; A holds at most 2 attempts at once", async () => {
    await floodFromA(server, asA, hangBase);
    await until("A's receivers get requests", () => hang.seen(), (n) => n >= 1, 5000);
    await sleep(1500);

    const b = await create(asB, `${rxBase}/b`, ["box.paused"]);
    const t0 = Date.now();
    insertEvent(server, b.id, "box.paused");
    // Before: every slot held by A's hanging attempts, 8 at a time for 10 s each: B's after ~40 s.
    const got = await until("B's delivery", () => rx.got.filter((g) => g.path === "/b"), (l) => l.length === 1, 5000);
    expect(got[0]!.at - t0).toBeLessThan(2000);
    expect(hang.most()).toBeLessThanOrEqual(2);
  });
});

describe("webhook sending is shared fairly with HOLM_SERVER_SCHEDULE=external", () => {
  let server: TestServer;
  let asA: Api;
  let asB: Api;
  const hang = hangingReceiver();
  const rx = answeringReceiver();
  const cron = randomBytes(24).toString("hex");
  let hangBase = "";
  let rxBase = "";

  beforeAll(async () => {
    hangBase = await listen(hang.server);
    rxBase = await listen(rx.server);
    server = await startServer({
      HOLM_STORAGE_BACKEND: "local",
      HOLM_SERVER_SCHEDULE: "external",
      HOLM_SERVER_JOBS: "queue",
      CRON_SECRET: cron,
      HOLM_WEBHOOK_ALLOW_PRIVATE: "1",
    });
    ({ asA, asB } = await twoWorkspaces(server));
  });

  afterAll(async () => {
    await Promise.all([shut(hang.server), shut(rx.server)]);
    await server?.stop();
  });

  it("one /v1/jobs/run sends workspace B's delivery within 2 s while workspace A's 20 receivers hang", async () => {
    await floodFromA(server, asA, hangBase);
    await sleep(100);
    const b = await create(asB, `${rxBase}/b`, ["box.paused"]);
    insertEvent(server, b.id, "box.paused");

    const t0 = Date.now();
    const run = fetch(`${server.base}/v1/jobs/run`, { method: "POST", headers: { authorization: `Bearer ${cron}` } });
    // Before: batches of 8 joined by Promise.all, A's first: B's waited for A's 10 s timeouts.
    const got = await until("B's delivery", () => rx.got.filter((g) => g.path === "/b"), (l) => l.length === 1, 5000);
    expect(got[0]!.at - t0).toBeLessThan(2000);
    expect(hang.most()).toBeLessThanOrEqual(2);
    // The call ends once A's receivers are gone (their attempts fail at once), not after 50 s.
    await shut(hang.server);
    const res = await run;
    expect(res.status).toBe(200);
    expect(Number(res.headers.get("holm-webhook-deliveries"))).toBeGreaterThanOrEqual(1);
  });
});
