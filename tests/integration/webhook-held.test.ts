import { createHmac, timingSafeEqual } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { consoleClient } from "../support/console";
import { type TestServer, json, startServer } from "../support/server";
import { openStore } from "../support/store";
import { type Api, apiAs } from "../support/workspaces";
import { until } from "../support/until";

// Webhooks that cannot send for a while (docs/decisions/0018), against a real server and a real
// receiver on 127.0.0.1 (HOLM_WEBHOOK_ALLOW_PRIVATE=1), retries based at 300 ms:
// - a webhook whose secret does not open with this server's key (its store restored from a
//   `--no-key` backup, made here by removing secret.key): a rotation makes it sign again at once,
//   as the previous secret it would keep beside the new one can sign nothing;
// - a disabled webhook: its pending deliveries wait without attempts (no count, no backoff), and
//   enabling it sends them at once; one held past its 24 h is failed without being sent.
// Events are written straight into the store's `event` table, as another process would.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Received {
  path: string;
  signature: string;
  body: string;
}

/** Records every request; answers the next status of `answers[path]` (200 when none). */
function receiver() {
  const got: Received[] = [];
  const answers: Record<string, number[]> = {};
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      got.push({ path: req.url ?? "", signature: String(req.headers["holm-signature"]), body });
      res.statusCode = answers[req.url ?? ""]?.shift() ?? 200;
      res.end("ok");
    });
  });
  return { server, answers, at: (p: string) => got.filter((g) => g.path === p) };
}

/** The `v1=` values of a Holm-Signature whose `t` is fresh, each checked as a receiver would. */
function signedBy(secret: string, r: Received): boolean[] {
  const m = /^t=(\d+)((?:,v1=[0-9a-f]{64})+)$/.exec(r.signature);
  if (!m || Math.abs(Date.now() / 1000 - Number(m[1])) > 300) return [];
  const want = createHmac("sha256", secret).update(`${m[1]}.${r.body}`).digest();
  return m[2]!.split(",v1=").slice(1).map((h) => timingSafeEqual(Buffer.from(h, "hex"), want));
}

const rx = receiver();
let rxBase = "";
let server: TestServer | undefined;

beforeAll(async () => {
  await new Promise<void>((r) => rx.server.listen(0, "127.0.0.1", r));
  rxBase = `http://127.0.0.1:${(rx.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await server?.stop();
  await new Promise((r) => rx.server.close(r));
});

function insertEvent(s: TestServer, webhookId: string, kind: string) {
  const db = openStore(s);
  const { owner } = db.prepare("select owner from webhook where id = ?").get(webhookId) as { owner: string };
  db.prepare("insert into event (at_ms, kind, owner, data_json) values (?, ?, ?, ?)").run(Date.now(), kind, owner, JSON.stringify({ by: "server", by_name: "holm" }));
  db.close();
}

async function deliveries(api: Api, id: string): Promise<any[]> {
  return (await json(await api(`/v1/webhooks/${id}/deliveries`))).deliveries;
}

it("after a restore without the key, rotating the secret (24 h grace, as the console does) signs the next delivery with the new secret alone", async () => {
  const first = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_WEBHOOK_ALLOW_PRIVATE: "1", HOLM_WEBHOOK_RETRY_BASE_MS: "300" });
  server = first;
  const c = consoleClient(first);
  const key = (await c.createKey(await c.signUp("ada@example.com", "A"), "a")).secret;
  const made = await json(await apiAs(first, key)("/v1/webhooks", { method: "POST", json: { url: `${rxBase}/nokey`, events: ["box.paused"] } }));
  expect(made.id, JSON.stringify(made)).toMatch(/^whk_/);

  // The same store under a new server key: the webhook's secret no longer opens.
  await first.stop();
  fs.rmSync(path.join(first.stateDir, "secret.key"));
  server = await first.restart();
  const asA = apiAs(server, key);
  insertEvent(server, made.id, "box.paused");
  const failed = await until("the unsignable delivery", () => deliveries(asA, made.id), (l) => l[0]?.status === "failed");
  expect(failed[0]).toMatchObject({ attempts: 1, error: expect.stringMatching(/does not open with this server's key/) });
  const sealedBefore = (openStore(server).prepare("select sealed_secret from webhook where id = ?").get(made.id) as { sealed_secret: string }).sealed_secret;

  const rotated = await asA(`/v1/webhooks/${made.id}/secret`, { method: "POST", json: {} });
  const body = await json(rotated);
  expect(rotated.status, JSON.stringify(body)).toBe(200);
  // No previous secret signs: it could not be opened to sign anything.
  expect(body).toMatchObject({ id: made.id, rotation_ends_at_ms: null, secret: expect.stringMatching(/^whsec_/) });
  expect(await json(await asA(`/v1/webhooks/${made.id}`))).toMatchObject({ rotation_ends_at_ms: null });

  insertEvent(server, made.id, "box.paused");
  const sent = await until("the delivery after the rotation", () => deliveries(asA, made.id), (l) => l.length === 2 && l[0].status !== "pending");
  expect(sent[0], JSON.stringify(sent)).toMatchObject({ status: "delivered", attempts: 1, error: null });
  const got = rx.at("/nokey");
  expect(got).toHaveLength(1);
  expect(signedBy(body.secret, got[0]!)).toEqual([true]);

  // A rotation an earlier version made keeps the unopenable secret as the previous one, for 24 h:
  // the delivery still goes, signed by the secret that opens.
  const db = openStore(server);
  db.prepare("update webhook set sealed_previous_secret = ?, previous_until_ms = ? where id = ?").run(sealedBefore, Date.now() + 86_400_000, made.id);
  db.close();
  insertEvent(server, made.id, "box.paused");
  const third = await until("the delivery beside an unopenable previous secret", () => deliveries(asA, made.id), (l) => l.length === 3 && l[0].status !== "pending");
  expect(third[0], JSON.stringify(third)).toMatchObject({ status: "delivered", attempts: 1, error: null });
  expect(signedBy(body.secret, rx.at("/nokey")[1]!)).toEqual([true]);
  await server.stop();
  server = undefined;
}, 120_000);

it("a disabled webhook's pending delivery waits without attempts; enabling it sends that delivery at once, at its next attempt; one held past its 24 h is failed, unsent", async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_WEBHOOK_ALLOW_PRIVATE: "1", HOLM_WEBHOOK_RETRY_BASE_MS: "300" });
  const c = consoleClient(server);
  const asA = apiAs(server, (await c.createKey(await c.signUp("ada@example.com", "A"), "a")).secret);
  const hook = await json(await asA("/v1/webhooks", { method: "POST", json: { url: `${rxBase}/held`, events: ["box.paused"] } }));
  rx.answers["/held"] = [500];
  insertEvent(server, hook.id, "box.paused");
  await until("a first failed attempt", () => deliveries(asA, hook.id), (l) => l[0]?.attempts === 1);
  expect((await asA(`/v1/webhooks/${hook.id}`, { method: "PATCH", json: { enabled: false } })).status).toBe(200);

  // Disabled for 4 s (at a 300 ms base, five retries' worth): nothing is tried, nothing counted.
  await sleep(4000);
  const held = await deliveries(asA, hook.id);
  expect(held, JSON.stringify(held)).toEqual([expect.objectContaining({ status: "pending", attempts: 1, last_status: 500, next_attempt_at_ms: null })]);
  expect(rx.at("/held")).toHaveLength(1);

  const enabledAt = Date.now();
  expect((await asA(`/v1/webhooks/${hook.id}`, { method: "PATCH", json: { enabled: true } })).status).toBe(200);
  const done = await until("the held delivery", () => deliveries(asA, hook.id), (l) => l[0]?.status !== "pending", 10_000);
  expect(done[0], JSON.stringify(done)).toMatchObject({ status: "delivered", attempts: 2, last_status: 200 });
  // Sent as soon as the loop's next sweep: no backoff grown while disabled.
  expect(done[0].last_attempt_at_ms - enabledAt).toBeLessThan(1500);
  expect(rx.at("/held")).toHaveLength(2);

  // Held past its 24 h: the give-up still comes, unsent. A row made 25 h ago, as the loop left it.
  const db = openStore(server);
  const row = (id: string, seq: number) =>
    db.prepare("insert into webhook_delivery (id, webhook_id, event_seq, kind, body, status, attempts, created_at_ms, next_at_ms) values (?, ?, ?, 'box.paused', ?, 'pending', 1, ?, ?)")
      .run(id, hook.id, seq, JSON.stringify({ seq, kind: "box.paused" }), Date.now() - 25 * 3600_000, Date.now() + 60_000);
  expect((await asA(`/v1/webhooks/${hook.id}`, { method: "PATCH", json: { enabled: false } })).status).toBe(200);
  row("whd_000000000000000000000001", 900);
  row("whd_000000000000000000000002", 901);
  db.close();
  // Still disabled: the prune (hourly in the loop) ends it.
  expect((await server.api("/v1/jobs/prune", { method: "POST" })).status).toBe(200);
  const one = (await deliveries(asA, hook.id)).filter((d) => d.event_seq >= 900);
  expect(one).toEqual([
    expect.objectContaining({ status: "failed", attempts: 1, next_attempt_at_ms: null, error: expect.stringMatching(/^not sent: the webhook was disabled/) }),
    expect.objectContaining({ status: "failed", attempts: 1, next_attempt_at_ms: null, error: expect.stringMatching(/^not sent: the webhook was disabled/) }),
  ]);
  const db2 = openStore(server);
  db2.prepare("update webhook_delivery set status = 'pending', error = null where id = ?").run("whd_000000000000000000000001");
  db2.close();
  // Enabled again: one held past its 24 h is failed then, not sent.
  expect((await asA(`/v1/webhooks/${hook.id}`, { method: "PATCH", json: { enabled: true } })).status).toBe(200);
  expect((await deliveries(asA, hook.id)).find((d) => d.event_seq === 900)).toMatchObject({ status: "failed", error: expect.stringMatching(/^not sent: the webhook was disabled/) });
  await sleep(1500);
  expect(rx.at("/held")).toHaveLength(2);
}, 120_000);
