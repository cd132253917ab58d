import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Member, Person } from "../support/console";
import { registerSecret } from "../support/log-secrets";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { type Api, twoWorkspaces } from "../support/workspaces";
import { openStore, storeAtRest } from "../support/store";
import { until } from "../support/until";

// Webhooks (issue 16, docs/decisions/0018) with real parts: a real server process, a real HTTP
// receiver on 127.0.0.1 in this file (the server may reach it because the test server runs with
// HOLM_WEBHOOK_ALLOW_PRIVATE=1), one real box for box.created/box.ready, and the server's own
// store for cheaper events (a row written into `event`, as another process would). Every
// signature is checked here as a receiver would: HMAC-SHA256 over "<t>.<body>", compared in
// constant time. Refusals of private targets run on a server without the allowance; no test
// traffic goes anywhere but 127.0.0.1.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

/** A receiver: records every request; answers the next status of `answers[path]` (200 when none). */
function receiver() {
  const got: Received[] = [];
  const answers: Record<string, number[]> = {};
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      got.push({ path: req.url ?? "", headers: req.headers, body, at: Date.now() });
      if (holdPaths.has(req.url ?? "")) {
        held.push(res);
        return;
      }
      res.statusCode = answers[req.url ?? ""]?.shift() ?? 200;
      res.end("ok");
    });
  });
  /** Paths whose requests get no answer until `release()`. */
  const holdPaths = new Set<string>();
  const held: http.ServerResponse[] = [];
  const release = () => {
    holdPaths.clear();
    for (const res of held.splice(0)) res.end("ok");
  };
  return { server, got, answers, holdPaths, held, release, at: (p: string) => got.filter((g) => g.path === p) };
}

/** What a receiver does with a delivery: verify `Holm-Signature` against the secret. */
function verify(secret: string, r: Received): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(r.headers["holm-signature"]));
  if (!m) return false;
  const want = createHmac("sha256", secret).update(`${m[1]}.${r.body}`).digest();
  const given = Buffer.from(m[2]!, "hex");
  // Also refuse a stale timestamp (replays of a captured request): five minutes here.
  return given.length === want.length && timingSafeEqual(given, want) && Math.abs(Date.now() / 1000 - Number(m[1])) < 300;
}

/** The `v1=` values of a Holm-Signature (two during a rotation's window), and its `t`. */
function signatures(r: Received): { t: string; v1: string[] } {
  const m = /^t=(\d+)((?:,v1=[0-9a-f]{64})+)$/.exec(String(r.headers["holm-signature"]));
  if (!m) return { t: "", v1: [] };
  return { t: m[1]!, v1: m[2]!.split(",v1=").slice(1) };
}

/** A receiver during a rotation: accepts when any v1 is the HMAC under its secret (constant time). */
function verifyAny(secret: string, r: Received): boolean {
  const { t, v1 } = signatures(r);
  const want = createHmac("sha256", secret).update(`${t}.${r.body}`).digest();
  return v1.some((h) => timingSafeEqual(Buffer.from(h, "hex"), want)) && Math.abs(Date.now() / 1000 - Number(t)) < 300;
}

let server: TestServer;
let asA: Api;
let asB: Api;
let vic: Member;
let c: Awaited<ReturnType<typeof twoWorkspaces>>["c"];
let ada: Person;
const rx = receiver();
let rxBase = "";
/** Every answer's text, and every secret made: no answer after a create may show a secret. */
const answers: string[] = [];
const secrets: string[] = [];

async function call(api: Api, method: string, p: string, body?: unknown) {
  const res = await api(p, { method, json: body });
  const text = await res.text();
  answers.push(text);
  return { status: res.status, text, body: text ? JSON.parse(text) : undefined };
}

function store(s: TestServer) {
  const db = openStore(s);
  db.pragma("busy_timeout = 5000");
  return db;
}

/** Records an event of the webhook's workspace straight into the store (the loop polls it). */
function insertEvent(s: TestServer, webhookId: string, kind: string, boxId = `box_${randomBytes(16).toString("hex")}`) {
  const db = store(s);
  const { owner } = db.prepare("select owner from webhook where id = ?").get(webhookId) as { owner: string };
  db.prepare("insert into event (at_ms, kind, owner, box_id, data_json) values (?, ?, ?, ?, ?)").run(Date.now(), kind, owner, boxId, JSON.stringify({ by: "server", by_name: "holm" }));
  db.close();
  return boxId;
}

async function deliveries(api: Api, id: string) {
  const r = await call(api, "GET", `/v1/webhooks/${id}/deliveries`);
  expect(r.status, r.text).toBe(200);
  return r.body.deliveries as any[];
}

async function create(api: Api, body: Record<string, unknown>) {
  const r = await call(api, "POST", "/v1/webhooks", body);
  expect(r.status, r.text).toBe(200);
  secrets.push(r.body.secret);
  return r.body as { id: string; secret: string; url: string; events: string[]; enabled: boolean };
}

beforeAll(async () => {
  await new Promise<void>((r) => rx.server.listen(0, "127.0.0.1", r));
  rxBase = `http://127.0.0.1:${(rx.server.address() as AddressInfo).port}`;
  server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_WEBHOOK_ALLOW_PRIVATE: "1", HOLM_WEBHOOK_RETRY_BASE_MS: "300" });
  ({ c, ada, asA, asB } = await twoWorkspaces(server));
  vic = await c.invite(ada, "vic@example.com", "viewer");
});

afterAll(async () => {
  await server?.stop();
  await new Promise((r) => rx.server.close(r));
  await removeTestBoxes();
});

describe("webhooks", () => {
  it("create answers the secret once; list, get and patch never show it; unknown keys, bad kinds and non-http URLs are 400", async () => {
    const made = await create(asA, { url: `${rxBase}/first`, events: ["box.removed"] });
    expect(made).toEqual({ id: expect.stringMatching(/^whk_[0-9a-f]{24}$/), url: `${rxBase}/first`, events: ["box.removed"], enabled: true, created_at_ms: expect.any(Number), updated_at_ms: expect.any(Number), rotation_ends_at_ms: null, secret: expect.stringMatching(/^whsec_/) });
    const given = await create(asA, { url: `${rxBase}/given`, events: ["*"], secret: "my-own-secret-0123456789", enabled: false });
    expect(given.secret).toBe("my-own-secret-0123456789");
    const list = await call(asA, "GET", "/v1/webhooks");
    expect(list.body.webhooks.map((w: any) => w.id)).toEqual([made.id, given.id]);
    expect(list.body.webhooks[1]).toMatchObject({ enabled: false, events: ["*"] });
    const one = await call(asA, "GET", `/v1/webhooks/${made.id}`);
    expect(one.body).toEqual({ ...made, secret: undefined });
    const patched = await call(asA, "PATCH", `/v1/webhooks/${made.id}`, { events: ["box.removed", "box.failed"], enabled: false });
    expect(patched.body).toMatchObject({ id: made.id, events: ["box.removed", "box.failed"], enabled: false });
    for (const text of [list.text, one.text, patched.text]) expect(text).not.toMatch(/secret/);

    for (const [body, says] of [
      [{ url: `${rxBase}/x`, events: ["box.ready"], extra: 1 }, 'unknown key "extra"'],
      [{ url: `${rxBase}/x`, events: ["box.exploded"] }, "events.0"],
      [{ url: `${rxBase}/x`, events: [] }, "at least one event kind"],
      [{ url: "ftp://127.0.0.1/x", events: ["box.ready"] }, "only http and https"],
      [{ url: "not a url", events: ["box.ready"] }, "not a URL"],
      [{ url: `${rxBase}/x`, events: ["box.ready"], secret: "short" }, "at least 16"],
    ] as const) {
      const r = await call(asA, "POST", "/v1/webhooks", body);
      expect(r.status, r.text).toBe(400);
      expect(r.body).toEqual({ code: "bad_request", message: expect.stringContaining(says), retryable: false });
    }
    const unknownPatch = await call(asA, "PATCH", `/v1/webhooks/${made.id}`, { secret: "x".repeat(20) });
    expect(unknownPatch.status).toBe(400);
    expect(unknownPatch.body.message).toContain('unknown key "secret"');
    expect((await call(asA, "DELETE", `/v1/webhooks/${given.id}`)).body).toEqual({ id: given.id, deleted: true });
    expect((await call(asA, "GET", `/v1/webhooks/${given.id}`)).status).toBe(404);
    expect((await call(asA, "DELETE", `/v1/webhooks/${made.id}`)).status).toBe(200);
  });

  it("a real box's box.created and box.ready arrive signed (HMAC-SHA256 of t.body), with the event's id; the log shows status and latency; its DELETE answers while box.removed's delivery is still held", async () => {
    const hook = await create(asA, { url: `${rxBase}/box`, events: ["box.created", "box.ready"] });
    const made = await call(asA, "POST", "/v1/boxes", {});
    expect([200, 202], made.text).toContain(made.status);
    const boxId = made.body.id as string;
    try {
      await until("two deliveries", async () => rx.at("/box").length, (n) => n >= 2, 90_000);
      const got = rx.at("/box");
      const kinds = got.map((g) => JSON.parse(g.body).kind);
      expect(kinds.sort()).toEqual(["box.created", "box.ready"]);
      for (const g of got) {
        expect(verify(hook.secret, g), g.headers["holm-signature"] as string).toBe(true);
        // A receiver holding another secret, or a body changed on the way, fails the check.
        expect(verify("not-the-secret-at-all", g)).toBe(false);
        expect(verify(hook.secret, { ...g, body: g.body.replace(boxId, "box_other") })).toBe(false);
        const event = JSON.parse(g.body);
        expect(event).toMatchObject({ box_id: boxId, seq: expect.any(Number), at_ms: expect.any(Number) });
        expect(g.headers["holm-event-id"]).toBe(String(event.seq));
        expect(g.headers["holm-event-kind"]).toBe(event.kind);
        expect(g.headers["holm-delivery-id"]).toMatch(/^whd_/);
        expect(g.headers["content-type"]).toBe("application/json");
      }
      const log = await until("both delivered", () => deliveries(asA, hook.id), (l) => l.length === 2 && l.every((d) => d.status === "delivered"));
      for (const d of log) {
        expect(d).toMatchObject({ status: "delivered", attempts: 1, last_status: 200, error: null, next_attempt_at_ms: null, replay_of: null });
        expect(d.latency_ms).toBeGreaterThanOrEqual(0);
        expect(d.latency_ms).toBeLessThan(5000);
      }

      // A delivery never holds up the request that caused its event: the receiver of box.removed
      // answers only after the DELETE has answered (were the delivery inside the request, the
      // DELETE would wait out the 10 s attempt timeout first).
      const removed = await create(asA, { url: `${rxBase}/held`, events: ["box.removed"] });
      rx.holdPaths.add("/held");
      const t0 = Date.now();
      const del = await asA(`/v1/boxes/${boxId}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
      const took = Date.now() - t0;
      expect(del.status, await del.text()).toBe(200);
      expect(took).toBeLessThan(9000);
      await until("the held delivery arrives", async () => rx.held.length, (n) => n === 1);
      expect(JSON.parse(rx.at("/held")[0]!.body)).toMatchObject({ kind: "box.removed", box_id: boxId });
      expect(verify(removed.secret, rx.at("/held")[0]!)).toBe(true);
      rx.release();
      await until("the held one delivered", () => deliveries(asA, removed.id), (l) => l[0]?.status === "delivered");
      await call(asA, "DELETE", `/v1/webhooks/${removed.id}`);
    } finally {
      rx.release();
      await asA(`/v1/boxes/${boxId}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    }
  });

  it("a receiver that answers 500 gets the same signed delivery again, later each time, until it answers 2xx; replay sends it once more", async () => {
    const hook = await create(asA, { url: `${rxBase}/retry`, events: ["box.paused"] });
    rx.answers["/retry"] = [500, 500, 503];
    const boxId = insertEvent(server, hook.id, "box.paused");
    const log = await until("delivered after retries", () => deliveries(asA, hook.id), (l) => l[0]?.status === "delivered");
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ status: "delivered", attempts: 4, last_status: 200, error: null });
    const got = rx.at("/retry");
    expect(got).toHaveLength(4);
    expect(new Set(got.map((g) => g.body)).size).toBe(1);
    expect(new Set(got.map((g) => g.headers["holm-delivery-id"])).size).toBe(1);
    expect(JSON.parse(got[0]!.body)).toMatchObject({ kind: "box.paused", box_id: boxId });
    for (const g of got) expect(verify(hook.secret, g)).toBe(true);
    // Backoff: base 300 ms doubling, with jitter in [0.5, 1.5): the three waits are at least 150,
    // 300 and 600 ms. Arrival times stand in for send times, and one attempt can reach the
    // receiver late on a busy machine (seen: a first attempt late enough that the next arrived
    // 51 ms after it), so the bound is on the whole span, not on each gap.
    const gaps = got.slice(1).map((g, i) => g.at - got[i]!.at);
    expect(got[3]!.at - got[0]!.at, `gaps ${gaps}`).toBeGreaterThanOrEqual(150 + 300 + 600 - 100);

    // Midway, the log says what went wrong and when the next try is.
    rx.answers["/retry"] = [500];
    const replay = await call(asA, "POST", `/v1/webhooks/${hook.id}/deliveries/${log[0].id}/replay`);
    expect(replay.status, replay.text).toBe(200);
    expect(replay.body).toMatchObject({ id: expect.stringMatching(/^whd_/), replay_of: log[0].id, status: "pending", attempts: 0 });
    const failedOnce = await until("the replay's first try", () => deliveries(asA, hook.id), (l) => l[0]?.attempts >= 1);
    expect(failedOnce[0]).toMatchObject({ id: replay.body.id, last_status: 500, error: "the receiver answered 500", status: "pending" });
    expect(failedOnce[0].next_attempt_at_ms).toBeGreaterThan(failedOnce[0].last_attempt_at_ms);
    await until("replay delivered", () => deliveries(asA, hook.id), (l) => l[0]?.status === "delivered");
    const all = rx.at("/retry");
    expect(all).toHaveLength(6);
    expect(all[5]!.body).toBe(got[0]!.body);
    expect(all[5]!.headers["holm-event-id"]).toBe(got[0]!.headers["holm-event-id"]);
    expect(all[5]!.headers["holm-delivery-id"]).toBe(replay.body.id);
    expect(verify(hook.secret, all[5]!)).toBe(true);
  });

  it("a viewer can neither read nor change webhooks (409 denied); another workspace's webhook is 404 on every route", async () => {
    const hook = await create(asA, { url: `${rxBase}/private-ish`, events: ["box.stopped"] });
    const csrf = c.csrfIn(await c.page(vic, "/settings"));
    const asVic: Api = (p, init = {}) =>
      fetch(`${server.base}${p}`, {
        ...init,
        headers: { cookie: vic.cookie, "x-holm-csrf": csrf, ...(init.json !== undefined ? { "content-type": "application/json" } : {}) },
        body: init.json !== undefined ? JSON.stringify(init.json) : init.body,
      });
    for (const [method, p, body] of [
      ["GET", "/v1/webhooks", undefined],
      ["POST", "/v1/webhooks", { url: `${rxBase}/v`, events: ["*"] }],
      ["GET", `/v1/webhooks/${hook.id}`, undefined],
      ["PATCH", `/v1/webhooks/${hook.id}`, { enabled: false }],
      ["DELETE", `/v1/webhooks/${hook.id}`, undefined],
      ["GET", `/v1/webhooks/${hook.id}/deliveries`, undefined],
      ["POST", `/v1/webhooks/${hook.id}/secret`, {}],
    ] as const) {
      const r = await call(asVic, method, p, body);
      expect(r.status, `${method} ${p}: ${r.text}`).toBe(409);
      expect(r.body).toMatchObject({ code: "denied", retryable: false });
    }
    expect((await call(asB, "GET", "/v1/webhooks")).body).toEqual({ webhooks: [] });
    for (const [method, p, body] of [
      ["GET", `/v1/webhooks/${hook.id}`, undefined],
      ["PATCH", `/v1/webhooks/${hook.id}`, { enabled: false }],
      ["DELETE", `/v1/webhooks/${hook.id}`, undefined],
      ["GET", `/v1/webhooks/${hook.id}/deliveries`, undefined],
      ["POST", `/v1/webhooks/${hook.id}/deliveries/whd_000000000000000000000000/replay`, undefined],
      ["POST", `/v1/webhooks/${hook.id}/secret`, {}],
      ["POST", `/v1/webhooks/${hook.id}/secret`, { nope: 1 }],
    ] as const) {
      const r = await call(asB, method, p, body);
      expect(r.status, `${method} ${p}: ${r.text}`).toBe(404);
      expect(r.body).toMatchObject({ code: "not_found" });
    }
    // Still there and unchanged for its own workspace.
    expect((await call(asA, "GET", `/v1/webhooks/${hook.id}`)).body).toMatchObject({ enabled: true });
    // B's events never reach A's webhook.
    const ownerB = "ws_not_a";
    const db = store(server);
    db.prepare("insert into event (at_ms, kind, owner) values (?, 'box.stopped', ?)").run(Date.now(), ownerB);
    db.close();
    await sleep(2500);
    expect(rx.at("/private-ish")).toHaveLength(0);
    await call(asA, "DELETE", `/v1/webhooks/${hook.id}`);
  });

  it("rotating the secret answers a new one once; both sign during the window (new first), then only the new one; unknown keys are 400", async () => {
    const hook = await create(asA, { url: `${rxBase}/rotate`, events: ["box.paused"] });
    insertEvent(server, hook.id, "box.paused");
    await until("the first delivery", async () => rx.at("/rotate"), (l) => l.length === 1);
    expect(signatures(rx.at("/rotate")[0]!).v1).toHaveLength(1);
    expect(verify(hook.secret, rx.at("/rotate")[0]!)).toBe(true);

    for (const bad of [{ grace_secs: -1 }, { grace_secs: 8 * 24 * 3600 }, { grace_secs: 1.5 }, { rotate: true }]) {
      const r = await call(asA, "POST", `/v1/webhooks/${hook.id}/secret`, bad);
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.body).toMatchObject({ code: "bad_request", retryable: false });
    }
    // The window is 4 s here (24 h by default), so the test can see it end.
    const rot = await call(asA, "POST", `/v1/webhooks/${hook.id}/secret`, { grace_secs: 4 });
    expect(rot.status, rot.text).toBe(200);
    secrets.push(rot.body.secret);
    const fresh = rot.body.secret as string;
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(hook.secret);
    expect(rot.text).not.toContain(hook.secret);
    expect(rot.body).toMatchObject({ id: hook.id, url: hook.url, rotation_ends_at_ms: expect.any(Number) });
    const until_ms = rot.body.rotation_ends_at_ms as number;
    const got = await call(asA, "GET", `/v1/webhooks/${hook.id}`);
    expect(got.body.secret).toBeUndefined();
    expect(got.body.rotation_ends_at_ms).toBe(until_ms);

    insertEvent(server, hook.id, "box.paused");
    await until("the delivery in the window", async () => rx.at("/rotate"), (l) => l.length === 2);
    const during = rx.at("/rotate")[1]!;
    const sigs = signatures(during);
    expect(sigs.v1).toHaveLength(2);
    expect(verifyAny(fresh, during)).toBe(true);
    expect(verifyAny(hook.secret, during)).toBe(true);
    // The new secret's v1 comes first.
    expect(sigs.v1[0]).toBe(createHmac("sha256", fresh).update(`${sigs.t}.${during.body}`).digest("hex"));

    while (Date.now() <= until_ms + 200) await sleep(200);
    expect((await call(asA, "GET", `/v1/webhooks/${hook.id}`)).body.rotation_ends_at_ms).toBeNull();
    insertEvent(server, hook.id, "box.paused");
    await until("the delivery after the window", async () => rx.at("/rotate"), (l) => l.length === 3);
    const after = rx.at("/rotate")[2]!;
    expect(signatures(after).v1).toHaveLength(1);
    expect(verify(fresh, after)).toBe(true);
    expect(verifyAny(hook.secret, after)).toBe(false);

    // grace_secs 0 drops the previous secret at once (a leaked one).
    const now = await call(asA, "POST", `/v1/webhooks/${hook.id}/secret`, { grace_secs: 0 });
    expect(now.status, now.text).toBe(200);
    secrets.push(now.body.secret);
    expect(now.body.rotation_ends_at_ms).toBeNull();
    insertEvent(server, hook.id, "box.paused");
    await until("the delivery after an immediate rotation", async () => rx.at("/rotate"), (l) => l.length === 4);
    expect(signatures(rx.at("/rotate")[3]!).v1).toHaveLength(1);
    expect(verify(now.body.secret, rx.at("/rotate")[3]!)).toBe(true);
    expect(verifyAny(fresh, rx.at("/rotate")[3]!)).toBe(false);
    await call(asA, "DELETE", `/v1/webhooks/${hook.id}`);
  });

  it("a pending retry survives a restart, and an event recorded while the server was down is delivered after it", async () => {
    const hook = await create(asA, { url: `${rxBase}/restart`, events: ["box.stopped"] });
    rx.answers["/restart"] = Array(50).fill(500);
    insertEvent(server, hook.id, "box.stopped");
    await until("a failed first try", () => deliveries(asA, hook.id), (l) => l[0]?.attempts >= 1);
    await server.stop();
    rx.answers["/restart"] = [];
    const before = rx.at("/restart").length;
    const downBox = insertEvent(server, hook.id, "box.stopped");
    server = await server.restart();
    const log = await until("both delivered after restart", () => deliveries(asA, hook.id), (l) => l.length === 2 && l.every((d) => d.status === "delivered"));
    expect(log.find((d) => d.attempts > 1)).toBeTruthy();
    const after = rx.at("/restart").slice(before);
    expect(after.map((g) => JSON.parse(g.body).box_id)).toContain(downBox);
    for (const g of after) expect(verify(hook.secret, g)).toBe(true);
  });

  it("no secret is ever in an answer after its create, in the server's log or plain in its store file", async () => {
    expect(secrets.length).toBeGreaterThan(3);
    const creates = new Set(secrets.map((s) => answers.findIndex((a) => a.includes(s))));
    for (const s of secrets) {
      registerSecret(s, "a webhook signing secret");
      answers.forEach((a, i) => {
        if (!creates.has(i)) expect(a.includes(s), `answer ${i} shows a secret`).toBe(false);
      });
      expect(server.logs()).not.toContain(s);
      for (const f of storeAtRest(server)) expect(f.bytes.includes(s), f.name).toBe(false);
    }
  });

  it("without HOLM_WEBHOOK_ALLOW_PRIVATE: loopback, private, link-local, metadata and other non-public targets are refused at create, and a delivery to one is refused, not sent", async () => {
    const dir = server.stateDir;
    const hook = await create(asA, { url: `http://localhost:${new URL(rxBase).port}/refused`, events: ["box.removed"] });
    await server.stop();
    // The same store and keys, without the allowance (and the same secret key, from the state dir).
    // The same address too, so the workspace's key client (bound to it) still reaches it.
    const next = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_STATE_DIR: dir, HOLM_SERVER_ADDR: new URL(server.base).host });
    server = { ...next, stateDir: dir };
    for (const url of [
      `${rxBase}/x`,
      `http://localhost:${new URL(rxBase).port}/x`,
      "http://10.1.2.3/x",
      "http://172.16.0.1/x",
      "http://192.168.1.1/x",
      "http://169.254.169.254/latest/meta-data/",
      "http://100.100.100.200/x",
      "http://0.0.0.0/x",
      "http://[::1]/x",
      "http://[fe80::1]/x",
      "http://[fc00::1]/x",
      "http://[::ffff:192.168.0.1]/x",
      "http://224.0.0.1/x",
    ]) {
      const r = await call(asA, "POST", "/v1/webhooks", { url, events: ["*"] });
      expect(r.status, `${url}: ${r.text}`).toBe(400);
      expect(r.body).toEqual({ code: "bad_request", message: expect.stringContaining("HOLM_WEBHOOK_ALLOW_PRIVATE=1"), retryable: false });
      const patched = await call(asA, "PATCH", `/v1/webhooks/${hook.id}`, { url });
      expect(patched.status, `${url}: ${patched.text}`).toBe(400);
    }
    insertEvent(server, hook.id, "box.removed");
    const log = await until("a refused try", () => deliveries(asA, hook.id), (l) => l[0]?.attempts >= 1);
    // The member sees the refusal, not the address the name resolves to.
    expect(log[0]).toMatchObject({ status: "pending", last_status: null, error: expect.stringMatching(/^refused, not sent: url: "localhost" does not resolve to a public address/) });
    expect(log[0].error).not.toMatch(/127\.0\.0\.1|::1/);
    await sleep(1000);
    expect(rx.at("/refused")).toHaveLength(0);
  });
});
