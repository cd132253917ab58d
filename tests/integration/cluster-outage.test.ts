import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Person, consoleClient } from "../support/console";
import { type OwnRedis, type Relay, ownRedis, tcpRelay } from "../support/outage";
import { ADMIN_URL, createTestDatabase, databaseUrl, dropTestDatabases } from "../support/postgres";
import { RUN_LABEL, type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { type Api, apiAs } from "../support/workspaces";

// Two servers on one PostgreSQL and one Redis, and what happens when either goes away
// (docs/decisions/0021): Redis holds nothing that must survive it, so its outage or restart may
// slow the console's live updates but must not end a server, run an idempotent call twice, keep a
// revoked key working, or hang a retry; a store outage answers 503 `unavailable`, not 500.
// Its own Redis (stopped and restarted here) and a TCP relay in front of PostgreSQL (cut here).

const WANTED = process.env.HOLM_TEST_REDIS !== "0" && process.env.HOLM_TEST_POSTGRES !== "0";

let redis: OwnRedis;
let relay: Relay;
let a: TestServer;
let b: TestServer;
let database: string;
let ada: Person;
let box: string;
let keyA: string;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const batch = (api: Api, body: unknown, idem?: string) =>
  api(`/v1/boxes/${box}/screens/0/actions`, { method: "POST", json: body, headers: idem ? { "idempotency-key": idem } : {} });

/** A console form on `server`'s box page, as a person's click sends it. */
async function boxForm(server: TestServer, intent: string): Promise<{ status: number; ms: number }> {
  const c = consoleClient(server);
  const t0 = Date.now();
  const csrf = c.csrfIn(await c.page(ada, `/boxes/${box}`));
  const res = await c.form(ada, `/boxes/${box}`, { intent, screen: "0", csrf });
  await res.text();
  return { status: res.status, ms: Date.now() - t0 };
}

async function revoke(server: TestServer, id: string) {
  const c = consoleClient(server);
  const csrf = c.csrfIn(await c.page(ada, "/keys"));
  expect((await c.form(ada, "/keys?index", { intent: "revoke", id, csrf })).status).toBe(200);
}

/** The server still runs and answers. */
async function answers(server: TestServer): Promise<boolean> {
  try {
    return (await fetch(`${server.base}/v1/health`, { signal: AbortSignal.timeout(5000) })).ok;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  if (!WANTED) return;
  database = await createTestDatabase(RUN_LABEL);
  redis = await ownRedis();
  const pgAddr = new URL(ADMIN_URL);
  relay = await tcpRelay({ host: pgAddr.hostname, port: Number(pgAddr.port || 5432) });
  const url = new URL(databaseUrl(database));
  url.host = `127.0.0.1:${relay.port}`;
  const shared = {
    HOLM_STORAGE_BACKEND: "postgres",
    HOLM_DATABASE_URL: url.href,
    HOLM_REDIS_URL: redis.url,
    HOLM_SECRET_KEY: randomBytes(32).toString("hex"),
    HOLM_SERVER_TOKEN: randomBytes(24).toString("hex"),
    HOLM_TAKEOVER_GRACE_SECS: "300",
  };
  a = await startServer(shared);
  b = await startServer(shared);
  const c = consoleClient(a);
  ada = await c.signUp("ada@example.com", "A");
  keyA = (await c.createKey(ada, "agents")).secret;
  const res = await apiAs(a, keyA)("/v1/boxes", { method: "POST", json: {} });
  const created = await json(res);
  expect(res.status, JSON.stringify(created)).toBe(200);
  box = created.id;
}, 240_000);

afterAll(async () => {
  await Promise.all([a?.stop("SIGKILL"), b?.stop("SIGKILL")]);
  await redis?.stop();
  await relay?.cut().catch(() => undefined);
  await removeTestBoxes();
  if (database) await dropTestDatabases([database]);
});

describe.runIf(WANTED)("two servers when Redis or the store goes away", () => {
  it("a key revoked on A is refused on B by the very next call", async () => {
    const c = consoleClient(a);
    const k2 = await c.createKey(ada, "k2");
    const onB = apiAs(b, k2.secret);
    expect((await onB("/v1/secrets")).status).toBe(200);
    expect((await batch(onB, { actions: [{ type: "cursor" }] })).status).toBe(200);
    await revoke(a, k2.id);
    expect((await onB("/v1/secrets")).status).toBe(401);
    expect((await batch(onB, { actions: [{ type: "cursor" }] })).status).toBe(401);
  }, 60_000);

  it("a Redis restart in the middle of an idempotent call does not let its key run twice", async () => {
    const body = { actions: [{ type: "move", to: { x: 960, y: 500 } }, { type: "wait", ms: 4000 }, { type: "move", to: { x: 970, y: 500 } }] };
    const first = batch(apiAs(a, keyA), body, "rr-0");
    await sleep(800);
    await redis.stop();
    await redis.start();
    await sleep(50);
    // Another agent's batch on the same screen, through B: it waits for the running one (its
    // lock is back in Redis when A renews it), rather than acting in the middle of it.
    const other = batch(apiAs(b, keyA), { actions: [{ type: "move", to: { x: 980, y: 500 } }] });
    const second = await batch(apiAs(b, keyA), body, "rr-0");
    const one = await first;
    expect((await other).status).toBe(200);
    expect([one.status, second.status]).toEqual([200, 200]);
    const replays = [one, second].filter((r) => r.headers.get("idempotent-replayed") === "true");
    expect(replays.length, "the second call gets the first one's answer").toBe(1);
    // The trace holds one run: one move to 960.
    const trace = await json(await a.api(`/v1/boxes/${box}/trace?after=0&limit=500`));
    const moves = (trace.entries as { event: string; data?: { step?: { type: string; to?: { x: number } } } }[])
      .filter((e) => e.event === "acted" && e.data?.step?.type === "move")
      .map((e) => e.data!.step!.to!.x)
      .filter((x) => x >= 960);
    expect(moves.filter((x) => x === 960).length).toBe(1);
    // The batches on the screen ran one after the other: 960 and 970 together, 980 before or after.
    expect([[960, 970, 980], [980, 960, 970]]).toContainEqual(moves);
  }, 60_000);

  it("with Redis down, a key revoked on A is refused on B by the very next call", async () => {
    const c = consoleClient(a);
    const k3 = await c.createKey(ada, "k3");
    const onB = apiAs(b, k3.secret);
    expect((await onB("/v1/secrets")).status).toBe(200);
    await redis.stop();
    try {
      await revoke(a, k3.id);
      expect((await onB("/v1/secrets")).status).toBe(401);
    } finally {
      await redis.start();
    }
  }, 60_000);

  it("with Redis down, the console's actions answer quickly and neither server dies", async () => {
    await redis.stop();
    const took = await boxForm(a, "takeover");
    expect(took.status).toBe(200);
    const gave = await boxForm(b, "giveback");
    expect(gave.status).toBe(200);
    await sleep(3000);
    expect(await answers(a), "A still answers").toBe(true);
    expect(await answers(b), "B still answers").toBe(true);
    // The person got a quick answer, not one after a long wait on Redis.
    expect(took.ms, "takeover").toBeLessThan(5000);
    expect(gave.ms, "give-back").toBeLessThan(5000);
    await redis.start();
  }, 120_000);

  it("with Redis down, a retry of a dead server's idempotency key answers 503 retryable, not never", async () => {
    const body = { actions: [{ type: "move", to: { x: 700, y: 400 } }, { type: "wait", ms: 20_000 }] };
    void batch(apiAs(a, keyA), body, "dd-1").catch(() => undefined);
    await sleep(1000);
    await a.stop("SIGKILL");
    await redis.stop();
    await sleep(7000);
    const t0 = Date.now();
    const res = await batch(apiAs(b, keyA), body, "dd-1").catch((err) => err as Error);
    expect(res instanceof Response, String(res)).toBe(true);
    const r = res as Response;
    const got = await json(r);
    expect(r.status, JSON.stringify(got)).toBe(503);
    expect(got).toMatchObject({ code: "unavailable", retryable: true });
    expect(got.message).toMatch(/Redis/);
    expect(got.message).not.toMatch(/maxRetriesPerRequest|max retries/i);
    expect(Date.now() - t0).toBeLessThan(15_000);
    await redis.start();
    a = await a.restart();
  }, 120_000);

  it("with the store cut, calls answer 503 unavailable and readiness names the store", async () => {
    await relay.cut();
    try {
      const get = await b.api(`/v1/boxes/${box}`, { signal: AbortSignal.timeout(20_000) });
      const body = await json(get);
      expect(get.status, JSON.stringify(body)).toBe(503);
      expect(body).toMatchObject({ code: "unavailable", message: "the store is not reachable; try again shortly", retryable: true });
      const batched = await batch(apiAs(b, keyA), { actions: [{ type: "cursor" }] });
      expect(batched.status).toBe(503);
      // The readiness check (what a load balancer asks) names the store; /v1/health stays the seed's liveness.
      const ready = await fetch(`${b.base}/v1/health?ready=1`);
      const why = await json(ready);
      expect(ready.status).toBe(503);
      expect(why).toMatchObject({ code: "unavailable", checks: { store: { ok: false } } });
    } finally {
      await relay.mend();
    }
    await expect.poll(async () => (await b.api(`/v1/boxes/${box}`)).status, { timeout: 10_000 }).toBe(200);
  }, 60_000);
});
