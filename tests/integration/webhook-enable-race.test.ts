import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type TestServer, json, startServer } from "../support/server";
import { openStore } from "../support/store";
import { until as waitUntil } from "../support/until";

// Enabling and disabling a webhook at once (docs/decisions/0018), and a replay sent beside an
// enabling: whichever way the race goes, an enabled webhook never keeps a held delivery (pending
// with no next try), which nothing would send and no replay could replace. Races show on
// PostgreSQL (HOLM_TEST_STORE=postgres), where requests run side by side; on SQLite they run
// one after another and this passes trivially. And the prune sends a row left held on an enabled
// webhook, whatever left it so. A real receiver on 127.0.0.1: /fail answers 500
// (the deliveries stay pending, retried 5–15 min later), /ok answers 200.

const hits: string[] = [];
const rx = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    hits.push(req.url ?? "");
    res.statusCode = req.url === "/ok" ? 200 : 500;
    res.end();
  });
});
let base = "";
let server: TestServer;

beforeAll(async () => {
  await new Promise<void>((r) => rx.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(rx.address() as AddressInfo).port}`;
  server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_WEBHOOK_ALLOW_PRIVATE: "1", HOLM_WEBHOOK_RETRY_BASE_MS: "600000" });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await new Promise((r) => rx.close(r));
});

function insertEvent(webhookId: string) {
  const db = openStore(server);
  const { owner } = db.prepare("select owner from webhook where id = ?").get(webhookId);
  db.prepare("insert into event (at_ms, kind, owner, data_json) values (?, 'box.paused', ?, ?)").run(Date.now(), owner, JSON.stringify({ by: "server", by_name: "holm" }));
  db.close();
}

/** A webhook's held rows while it is enabled, read straight from the store: none may ever be left. */
function heldWhileEnabled(id: string): number {
  const db = openStore(server, { readonly: true });
  const { n } = db
    .prepare("select count(*) as n from webhook_delivery d join webhook w on w.id = d.webhook_id where w.id = ? and w.enabled = 1 and d.status = 'pending' and d.next_at_ms is null")
    .get(id);
  db.close();
  return Number(n);
}

const deliveries = async (id: string): Promise<any[]> => (await json(await server.api(`/v1/webhooks/${id}/deliveries`))).deliveries;
const patch = (id: string, enabled: boolean) => server.api(`/v1/webhooks/${id}`, { method: "PATCH", json: { enabled } });

const until = <T>(what: string, get: () => Promise<T>, ok: (v: T) => boolean, ms = 15_000) => waitUntil(what, get, ok, ms);

it("PATCH enabled:true and enabled:false sent together: when it ends enabled, no delivery is left held", async () => {
  const hook = await json(await server.api("/v1/webhooks", { method: "POST", json: { url: `${base}/fail`, events: ["box.paused"] } }));
  insertEvent(hook.id);
  insertEvent(hook.id);
  await until("two failed first attempts", () => deliveries(hook.id), (l) => l.length === 2 && l.every((d) => d.attempts >= 1));
  for (let trial = 0; trial < 12; trial++) {
    const answers = await Promise.all([true, false, true, false, true, false].map((on) => patch(hook.id, on)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const after = await json(await server.api(`/v1/webhooks/${hook.id}`));
    const list = await deliveries(hook.id);
    if (after.enabled) expect(list.filter((d) => d.status === "pending" && d.next_attempt_at_ms === null), `trial ${trial}`).toEqual([]);
    expect(heldWhileEnabled(hook.id), `trial ${trial}`).toBe(0);
  }
}, 120_000);

it("a replay sent together with PATCH enabled:true of a disabled webhook is not left held", async () => {
  const hook = await json(await server.api("/v1/webhooks", { method: "POST", json: { url: `${base}/ok`, events: ["box.paused"] } }));
  insertEvent(hook.id);
  const [first] = await until("the first delivery", () => deliveries(hook.id), (l) => l[0]?.status === "delivered");
  for (let trial = 0; trial < 10; trial++) {
    expect((await patch(hook.id, false)).status).toBe(200);
    const [replayed, enabled] = await Promise.all([server.api(`/v1/webhooks/${hook.id}/deliveries/${first.id}/replay`, { method: "POST" }), patch(hook.id, true)]);
    expect([replayed.status, enabled.status]).toEqual([200, 200]);
    expect(heldWhileEnabled(hook.id), `trial ${trial}`).toBe(0);
    // Enabled, the replay goes: nothing of this webhook stays pending.
    await until(`trial ${trial}: the replay sent`, () => deliveries(hook.id), (l) => l.every((d) => d.status !== "pending"), 5000);
  }
}, 120_000);

it("a delivery left held on an enabled webhook (whatever left it so) is sent after the prune", async () => {
  const hook = await json(await server.api("/v1/webhooks", { method: "POST", json: { url: `${base}/ok`, events: ["box.paused"] } }));
  const db = openStore(server);
  db.prepare("insert into webhook_delivery (id, webhook_id, event_seq, kind, body, status, attempts, created_at_ms, next_at_ms) values (?, ?, 7, 'box.paused', '{}', 'pending', 0, ?, null)")
    .run("whd_0000000000000000000000f1", hook.id, Date.now());
  db.close();
  expect((await server.api("/v1/jobs/prune", { method: "POST" })).status).toBe(200);
  expect(heldWhileEnabled(hook.id)).toBe(0);
  await until("the held row sent", () => deliveries(hook.id), (l) => l[0]?.status === "delivered", 5000);
}, 30_000);
