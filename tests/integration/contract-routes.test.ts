import { randomBytes } from "node:crypto";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NOT_BUILT } from "../../app/routes/v1/not-built-list";
import { type TestServer, docker, freePort, json, removeTestBoxes, startServer } from "../support/server";
import { openStore } from "../support/store";

// The routes of the contract (seed 000) as a client meets them: a wrong method, routes not
// built yet, paths the seed does not have; and scheduled work (reap, prune, queued jobs) with
// HOLM_SERVER_SCHEDULE internal and external. Real server processes, real boxes.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const DAY = 86_400_000;
const ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

afterAll(async () => {
  await removeTestBoxes();
});

/** Writes to the server's SQLite store from outside, as a clock would have: old rows. */
function store(server: TestServer) {
  const db = openStore(server);
  db.pragma("busy_timeout = 5000");
  return db;
}

function insertEvent(server: TestServer, atMs: number, boxId: string) {
  const db = store(server);
  db.prepare("insert into event (at_ms, kind, box_id) values (?, 'box.created', ?)").run(atMs, boxId);
  db.close();
}

async function eventBoxIds(server: TestServer): Promise<string[]> {
  const res = await server.api("/v1/events?limit=1000");
  expect(res.status).toBe(200);
  return (await json(res)).events.map((e: { box_id?: string }) => e.box_id);
}

/** Reads a box until `until` holds or `ms` passes; returns its last state. */
async function boxStateUntil(server: TestServer, id: string, until: (state: string) => boolean, ms: number) {
  const deadline = Date.now() + ms;
  let state = "";
  while (Date.now() < deadline) {
    const res = await server.api(`/v1/boxes/${id}`);
    state = res.status === 410 ? "gone" : (await json(res)).state;
    if (until(state)) break;
    await sleep(250);
  }
  return state;
}

const containerExists = async (id: string) => Boolean(await docker.getContainer(`holm-${id}`).inspect().catch(() => null));
const boxId = () => `box_${randomBytes(16).toString("hex")}`;

describe("routes, internal schedule", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_SERVER_PRUNE_SECS: "1" });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('a wrong method answers 405 + Allow with code method_not_allowed: the seed ties bad_request to 400 ("`bad_request` | 400")', async () => {
    const res = await server.api("/v1/boxes", { method: "PATCH" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, POST");
    expect(await json(res)).toEqual({ code: "method_not_allowed", message: expect.stringContaining("PATCH"), retryable: false });
    const del = await server.api("/v1/jobs/run", { method: "DELETE" });
    expect(del.status).toBe(405);
    expect(del.headers.get("allow")).toBe("GET, POST");
  });

  it('every seed route not built yet answers 400 unsupported ("`unsupported` | 400 | The box or runtime cannot do this."), after authentication', async () => {
    // Pages and Browser state are built (issue 12), the CDP proxy too (issue 13), runtimes and
    // images too (issue 16), native widgets last (issue 18): the list is empty, and a route put
    // back on it is checked below.
    expect(NOT_BUILT.map((r) => r.path)).toEqual([]);
    const concrete = (p: string) =>
      `/${p}`.replace(/:(\w+)/g, (_, name: string) => (name === "id" ? boxId() : `x-${name}`)).replace(/\*$/, "version");
    let checked = 0;
    for (const r of NOT_BUILT) {
      const url = concrete(r.path);
      for (const method of r.methods) {
        const where = `${method} ${url}`;
        const body = method === "GET" || method === "DELETE" ? {} : { json: {} };
        const res = await server.api(url, { method, ...body });
        expect(res.status, where).toBe(400);
        const out = await json(res);
        expect(out, where).toEqual({ code: "unsupported", message: expect.stringMatching(/ is not built on this server yet$/), retryable: false });
        expect(out.message, where).toContain(`/${r.path.replace(/:(\w+)/g, "{$1}").replace(/\*$/, "…")}`);
        // Without credentials: 401, as on built routes; the CDP proxy takes no bearer token (000).
        const bare = await fetch(`${server.base}${url}`, { method });
        expect(bare.status, `${where} without credentials`).toBe(r.open ? 400 : 401);
        expect((await json(bare)).code).toBe(r.open ? "unsupported" : "unauthorized");
        checked++;
      }
      // A method the seed does not give the route is a wrong method, not "not built".
      const other = ALL_METHODS.find((m) => !r.methods.includes(m));
      if (other) {
        const res = await server.api(url, { method: other });
        expect(res.status, `${other} ${url}`).toBe(405);
        expect(res.headers.get("allow")).toBe(r.methods.join(", "));
      }
    }
    expect(checked).toBe(NOT_BUILT.reduce((n, r) => n + r.methods.length, 0));
  });

  it('a path the seed does not have stays 404 not_found ("`not_found` | 404 | No such box, runtime, or object.")', async () => {
    for (const p of ["/v1/nothing/here", `/v1/boxes/${boxId()}/pagez`, "/v1/runtimes/docker/images/abc/more", "/v1/state", "/v1/cdp"]) {
      const res = await server.api(p);
      expect(res.status, p).toBe(404);
      expect(await json(res), p).toMatchObject({ code: "not_found", retryable: false });
    }
  });

  it('"the server keeps events for 7 days" (000), and without HOLM_SERVER_SCHEDULE=external the server prunes by itself', async () => {
    const old = boxId();
    const fresh = boxId();
    insertEvent(server, Date.now() - 6 * DAY, fresh);
    insertEvent(server, Date.now() - 8 * DAY, old);
    // The old one may be gone already (a sweep each second); the log below says a sweep took it.
    expect(await eventBoxIds(server)).toContain(fresh);
    // HOLM_SERVER_PRUNE_SECS=1: gone within a few sweeps, with nobody calling /v1/jobs/prune.
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && (await eventBoxIds(server)).includes(old)) await sleep(250);
    const left = await eventBoxIds(server);
    expect(left).not.toContain(old);
    expect(left).toContain(fresh);
    expect(server.logs()).toMatch(/"msg":"prune: removed .*1 event\(s\)/);
  });
});

describe("HOLM_SERVER_SCHEDULE=external", () => {
  let server: TestServer;
  const cron = randomBytes(24).toString("hex");
  let source: string;
  const byCron = (p: string, method = "POST") => fetch(`${server.base}${p}`, { method, headers: { authorization: `Bearer ${cron}` } });

  beforeAll(async () => {
    server = await startServer({
      HOLM_STORAGE_BACKEND: "local",
      HOLM_SERVER_SCHEDULE: "external",
      HOLM_SERVER_JOBS: "queue",
      HOLM_SERVER_REAP_SECS: "1",
      HOLM_SERVER_PRUNE_SECS: "1",
      CRON_SECRET: cron,
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('a queued launch waits for /v1/jobs/run ("Do the queued launches, forks and builds … Returns {ran}", 000)', async () => {
    const res = await server.api("/v1/boxes", { method: "POST", json: {} });
    const box = await json(res);
    expect(res.status, JSON.stringify(box)).toBe(202);
    expect(box.state).toBe("starting");
    source = box.id;
    // Nothing launches it by itself: no container, still starting.
    await sleep(3000);
    expect((await json(await server.api(`/v1/boxes/${source}`))).state).toBe("starting");
    expect(await containerExists(source)).toBe(false);
    // Same credentials as the other scheduled routes: CRON_SECRET or the server token, else 401.
    expect((await fetch(`${server.base}/v1/jobs/run`, { method: "POST" })).status).toBe(401);
    expect((await fetch(`${server.base}/v1/jobs/run`, { headers: { authorization: "Bearer not-the-cron-secret-at-all" } })).status).toBe(401);
    const run = await byCron("/v1/jobs/run");
    expect(run.status).toBe(200);
    expect(await json(run)).toEqual({ ran: 1 });
    expect((await json(await server.api(`/v1/boxes/${source}`))).state).toBe("ready");
    expect(await json(await byCron("/v1/jobs/run", "GET"))).toEqual({ ran: 0 });
  }, 240_000);

  it("a queued fork waits for /v1/jobs/run too: its launch and its replay", async () => {
    const res = await server.api(`/v1/boxes/${source}/fork`, { method: "POST", json: {} });
    const out = await json(res);
    expect(res.status, JSON.stringify(out)).toBe(202);
    const fork = out.box.id as string;
    await sleep(2000);
    expect((await json(await server.api(`/v1/boxes/${fork}`))).state).toBe("starting");
    const run = await server.api("/v1/jobs/run");
    expect(await json(run)).toEqual({ ran: 2 });
    expect((await json(await server.api(`/v1/boxes/${fork}`))).state).toBe("ready");
    const gone = await server.api(`/v1/boxes/${fork}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    expect(gone.status).toBe(200);
  }, 240_000);

  it('"Set HOLM_SERVER_SCHEDULE=external, and call these routes from a scheduler" (000): no reaping or pruning by itself', async () => {
    // The box's deadline and an event's age, moved into the past in the store.
    const db = store(server);
    db.prepare("update box set expires_at_ms = ? where id = ?").run(Date.now() - 1000, source);
    db.close();
    const old = boxId();
    insertEvent(server, Date.now() - 8 * DAY, old);
    // HOLM_SERVER_REAP_SECS=1 and HOLM_SERVER_PRUNE_SECS=1: an internal schedule would have
    // swept several times by now.
    await sleep(4000);
    expect((await json(await server.api(`/v1/boxes/${source}`))).state).toBe("ready");
    expect(await eventBoxIds(server)).toContain(old);
    expect(server.logs()).not.toMatch(/"msg":"(reaper|prune)/);
    // The scheduler's calls do it.
    expect(await json(await byCron("/v1/jobs/reap"))).toEqual({ removed: 1 });
    expect(await boxStateUntil(server, source, (s) => s === "gone", 1000)).toBe("gone");
    const pruned = await byCron("/v1/jobs/prune");
    expect(pruned.status).toBe(200);
    // The seed's answer, with no key for events.
    expect(Object.keys(await json(pruned)).sort()).toEqual(["boxes", "entries", "frames"]);
    expect(await eventBoxIds(server)).not.toContain(old);
  }, 60_000);
});

describe("HOLM_SERVER_SCHEDULE=external with HOLM_PUBLIC_URL and CRON_SECRET", () => {
  let server: TestServer;

  beforeAll(async () => {
    const port = await freePort();
    server = await startServer({
      HOLM_SERVER_ADDR: `127.0.0.1:${port}`,
      HOLM_PUBLIC_URL: `http://127.0.0.1:${port}`,
      HOLM_SERVER_SCHEDULE: "external",
      HOLM_SERVER_JOBS: "queue",
      CRON_SECRET: randomBytes(24).toString("hex"),
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('"the server calls its own /v1/jobs/run when it queues a job, so a job does not wait for the scheduler" (000)', async () => {
    const res = await server.api("/v1/boxes", { method: "POST", json: {} });
    const box = await json(res);
    expect(res.status, JSON.stringify(box)).toBe(202);
    expect(await boxStateUntil(server, box.id, (s) => s !== "starting", 180_000)).toBe("ready");
    expect(server.logs()).not.toMatch(/jobs\/run (answered|failed)|calling .* failed/);
    // Nothing left for the scheduler.
    expect(await json(await server.api("/v1/jobs/run"))).toEqual({ ran: 0 });
    const gone = await server.api(`/v1/boxes/${box.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    expect(gone.status).toBe(200);
  }, 240_000);
});
