import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, databaseUrl, dropTestDatabases } from "../support/postgres";
import { RUN_LABEL, type TestServer, docker, freePort, json, removeTestBoxes, startServer } from "../support/server";
import { openStore } from "../support/store";

// Servers sharing one PostgreSQL and Redis leave each other's work alone (docs/decisions/0021):
// a server that boots does not fail the boxes another is starting (a rolling restart), a webhook
// delivery is sent by one server only, and each server keeps its own warm pool. What a dead
// server left is still cleaned up, by one of the others.

// A Redis of this file's own (not the shared test Redis): the test holds the servers' start slot
// in it, as a server busy starting boxes would, so a box stays `starting` as long as it needs.
const WANTED = process.env.HOLM_TEST_POSTGRES !== "0";
let redis: ChildProcess | undefined;
let slots: Redis;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let database: string;
let shared: Record<string, string>;
const servers: TestServer[] = [];
const start = async (extra: Record<string, string> = {}) => {
  const s = await startServer({ ...shared, ...extra });
  servers.push(s);
  return s;
};

beforeAll(async () => {
  if (!WANTED) return;
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-redis-"));
  redis = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--dir", dir], { stdio: "ignore" });
  slots = new Redis(port, "127.0.0.1", { lazyConnect: true, retryStrategy: () => null });
  slots.on("error", () => undefined);
  for (let i = 0; ; i++) {
    try {
      await slots.connect();
      break;
    } catch (err) {
      if (i > 50) throw err;
      await sleep(100);
    }
  }
  database = await createTestDatabase(RUN_LABEL);
  shared = {
    HOLM_STORAGE_BACKEND: "postgres",
    HOLM_DATABASE_URL: databaseUrl(database),
    HOLM_REDIS_URL: `redis://127.0.0.1:${port}`,
    // One start at a time on all servers: the test holds that one slot to keep a box starting.
    HOLM_LAUNCH_CONCURRENCY: "1",
    HOLM_SECRET_KEY: randomBytes(32).toString("hex"),
    HOLM_SERVER_TOKEN: randomBytes(24).toString("hex"),
    HOLM_SERVER_REAP_SECS: "1",
    HOLM_WEBHOOK_ALLOW_PRIVATE: "1",
  };
}, 60_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop("SIGKILL")));
  await removeTestBoxes();
  if (database) await dropTestDatabases([database]);
  slots?.disconnect();
  redis?.kill("SIGKILL");
});

/** Holds the servers' one start slot (withClusterSlot's key) until the returned function runs. */
async function holdStartSlot(): Promise<() => Promise<void>> {
  const key = "holm:lock:start:docker:0";
  while ((await slots.set(key, "the test", "PX", 120_000, "NX")) !== "OK") await sleep(50);
  return async () => void (await slots.del(key));
}

/** Polls the box list of `s` until a box is `starting`; its id. */
async function startingBox(s: TestServer): Promise<string> {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await sleep(50)) {
    const list = (await json(await s.api("/v1/boxes"))).boxes as { id: string; state: string }[];
    const found = list.find((b) => b.state === "starting");
    if (found) return found.id;
  }
  throw new Error("no box became starting");
}

const containersOf = async (box: string) => docker.listContainers({ all: true, filters: { label: [`holm.box=${box}`] } });
const poolContainers = async () => docker.listContainers({ filters: { label: [`holm.test=${RUN_LABEL}`, "holm.pool=1"] } });

describe.runIf(WANTED)("servers sharing one store leave each other's work alone", () => {
  it("a server that boots leaves the box another is starting; a dead server's starting box is failed and removed", async () => {
    const a = await start();
    let release = await holdStartSlot();
    const creating = a.api("/v1/boxes", { method: "POST", json: {} });
    const id = await startingBox(a);
    // B boots (a rolling restart) while A is still starting the box.
    const b = await start();
    const stillStarting = (await json(await a.api(`/v1/boxes/${id}`))).state;
    await release();
    // A user polling the box meanwhile saw it starting, never failed.
    expect(stillStarting).toBe("starting");
    const res = await creating;
    const box = await json(res);
    expect(res.status, `${JSON.stringify(box)} (state when B had booted: ${stillStarting})`).toBe(200);
    expect(box.state).toBe("ready");
    expect((await json(await b.api(`/v1/boxes/${id}`))).state).toBe("ready");
    expect((await b.api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } })).status).toBe(200);

    // A dies while starting a box: B (which did not restart) fails it and removes its container.
    release = await holdStartSlot();
    void a.api("/v1/boxes", { method: "POST", json: {} }).catch(() => undefined);
    const orphan = await startingBox(a);
    await a.stop("SIGKILL");
    await release();
    await expect
      .poll(async () => (await json(await b.api(`/v1/boxes/${orphan}`))).state, { timeout: 30_000, message: "the dead server's starting box" })
      .toBe("failed");
    await expect.poll(async () => (await containersOf(orphan)).length, { timeout: 15_000 }).toBe(0);
    await b.stop();
  }, 180_000);

  it("a webhook delivery is sent once, whichever servers' loops find it due", async () => {
    const got: { id: string; event: string }[] = [];
    const rx = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        got.push({ id: String(req.headers["holm-delivery-id"]), event: String(req.headers["holm-event-id"]) });
        // A receiver that takes a moment, as most do: two senders overlap on it.
        setTimeout(() => res.end("ok"), 30);
      });
    });
    await new Promise<void>((r) => rx.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(rx.address() as AddressInfo).port}/hook`;
    try {
      const [a, b] = [await start(), await start()];
      const made = await json(await a.api("/v1/webhooks", { method: "POST", json: { url, events: ["*"] } }));
      expect(made.id).toMatch(/^whk_/);
      // Events as another process writes them: both servers' loops find them on their ticks.
      const store = openStore(a);
      const EVENTS = 60;
      for (let i = 0; i < EVENTS; i++) {
        store.prepare("insert into event (at_ms, kind, owner, box_id, data_json) values (?, ?, ?, ?, ?)").run(Date.now(), "box.ready", null, `box_${randomBytes(16).toString("hex")}`, null);
        if (i % 6 === 5) await sleep(170);
      }
      await expect.poll(() => new Set(got.map((g) => g.id)).size, { timeout: 30_000 }).toBe(EVENTS);
      await sleep(2500);
      const twice = got.filter((g, i) => got.findIndex((h) => h.id === g.id) !== i);
      expect(twice, "deliveries that arrived more than once").toEqual([]);
      expect(got.length).toBe(EVENTS);
      const log = (await json(await b.api(`/v1/webhooks/${made.id}/deliveries?limit=100`))).deliveries as { status: string; attempts: number }[];
      expect(log.map((d) => `${d.status} ${d.attempts}`)).toEqual(new Array(EVENTS).fill("delivered 1"));
      await Promise.all([a.stop(), b.stop()]);
    } finally {
      rx.close();
    }
  }, 120_000);

  it("each server keeps its own warm pool; a dead server's pool box is removed, not leaked", async () => {
    const POOL = { HOLM_POOL: "default=1" };
    const release = await holdStartSlot();
    const c = await start(POOL);
    const store = openStore(c);
    await expect.poll(() => store.prepare("select id from box where pooled = 1 and state = 'starting'").all().length).toBe(1);
    // D boots while C's pool box is starting: C's box is left alone.
    const d0 = await start();
    await release();
    await expect.poll(() => /pool: box_\w+ ready \(1 of 1 default\)/.test(c.logs()), { timeout: 60_000, message: "C's pool box ready" }).toBe(true);
    expect(c.logs()).not.toMatch(/did not start/);
    await d0.stop();

    // D, with a pool of its own, boots once C's pool box is ready: it keeps its own, beside C's.
    const d = await start(POOL);
    expect(d.logs()).not.toMatch(/back in the pool/);
    await expect.poll(() => /pool: box_\w+ ready \(1 of 1 default\)/.test(d.logs()), { timeout: 60_000, message: "D's own pool box ready" }).toBe(true);
    const pools = async () => (await poolContainers()).map((x) => x.Labels["holm.box"]).sort();
    const cPool = /pool: (box_\w+) ready/.exec(c.logs())![1]!;
    const dPool = /pool: (box_\w+) ready/.exec(d.logs())![1]!;
    expect(await pools()).toEqual([cPool, dPool].sort());

    // D dies: C, whose pool is full, removes D's pool box rather than leaving it to no one.
    await d.stop("SIGKILL");
    await expect.poll(pools, { timeout: 30_000, message: "the dead server's pool box, removed" }).toEqual([cPool]);
    expect(c.logs()).toMatch(new RegExp(`pool: removing ${dPool}: its server is gone`));
    // C hands out its own pool box.
    const claimed = await json(await c.api("/v1/boxes", { method: "POST", json: {} }));
    expect(claimed.id).toBe(cPool);
    await c.stop("SIGKILL");
  }, 240_000);
});
