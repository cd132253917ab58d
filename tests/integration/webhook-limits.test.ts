import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, startServer } from "../support/server";
import { openStore } from "../support/store";
import { type Api, twoWorkspaces } from "../support/workspaces";

// What a workspace member may make the server do with webhooks (docs/decisions/0018), against a
// real server without HOLM_WEBHOOK_ALLOW_PRIVATE: replays are capped (each is a request the
// server sends where the member points it), a refused target does not tell which address a name
// resolves to (no internal DNS lookups through the API), and a URL is kept as the sender will
// use it. No test traffic leaves the machine: the webhooks that could send are disabled, or
// subscribed to events that never happen here.

let server: TestServer;
let asA: Api;

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
  ({ asA } = await twoWorkspaces(server));
});

afterAll(async () => {
  await server?.stop();
});

async function call(method: string, p: string, body?: unknown) {
  const res = await asA(p, { method, json: body });
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : undefined };
}

describe("webhook replays", () => {
  it("a replay while the event's delivery is pending answers that one; a webhook makes at most 30 replays an hour, then 409 denied (retryable)", async () => {
    // Disabled: its deliveries wait as pending and nothing is sent.
    const made = await call("POST", "/v1/webhooks", { url: "http://8.8.8.8/hook", events: ["box.paused"], enabled: false });
    expect(made.status, made.text).toBe(200);
    const hook = made.body.id as string;
    // 40 past deliveries, each of its own event, already delivered (as the loop leaves them).
    const db = openStore(server);
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const id = `whd_${randomBytes(12).toString("hex")}`;
      db.prepare(
        "insert into webhook_delivery (id, webhook_id, event_seq, kind, body, status, attempts, created_at_ms, last_at_ms, last_status) values (?, ?, ?, ?, ?, 'delivered', 1, ?, ?, 200)",
      ).run(id, hook, 1000 + i, "box.paused", JSON.stringify({ seq: 1000 + i, kind: "box.paused" }), Date.now() - 7200_000, Date.now() - 7200_000);
      ids.push(id);
    }
    db.close();

    const first = await call("POST", `/v1/webhooks/${hook}/deliveries/${ids[0]}/replay`, {});
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ replay_of: ids[0], status: "pending", event_seq: 1000 });
    // Again, 20 times: the same pending delivery each time, nothing new queued.
    for (let i = 0; i < 20; i++) {
      const again = await call("POST", `/v1/webhooks/${hook}/deliveries/${ids[0]}/replay`, {});
      expect(again.status, again.text).toBe(200);
      expect(again.body.id).toBe(first.body.id);
    }
    // Replaying the replay is the same event: the same answer.
    expect((await call("POST", `/v1/webhooks/${hook}/deliveries/${first.body.id}/replay`, {})).body.id).toBe(first.body.id);

    for (let i = 1; i < 30; i++) {
      const r = await call("POST", `/v1/webhooks/${hook}/deliveries/${ids[i]}/replay`, {});
      expect(r.status, `replay ${i}: ${r.text}`).toBe(200);
      expect(r.body).toMatchObject({ replay_of: ids[i], status: "pending" });
    }
    const over = await call("POST", `/v1/webhooks/${hook}/deliveries/${ids[30]}/replay`, {});
    expect(over.status, over.text).toBe(409);
    expect(over.body).toEqual({ code: "denied", message: expect.stringMatching(/30 replays in the last hour.*try again after \d{4}-/), retryable: true });
    // Still answered with the pending one while over the cap: nothing new is made by it.
    expect((await call("POST", `/v1/webhooks/${hook}/deliveries/${ids[5]}/replay`, {})).status).toBe(200);

    const log = await call("GET", `/v1/webhooks/${hook}/deliveries?limit=200`);
    expect(log.body.deliveries.filter((d: any) => d.replay_of)).toHaveLength(30);
    expect(log.body.deliveries).toHaveLength(70);
  });
});

describe("webhook targets", () => {
  it("a name that resolves to a loopback address is refused without saying the address, as one that does not resolve is", async () => {
    for (const url of ["http://LOCALHOST/x", "http://localhost:8080/x"]) {
      const r = await call("POST", "/v1/webhooks", { url, events: ["box.paused"] });
      expect(r.status, r.text).toBe(400);
      expect(r.body).toEqual({ code: "bad_request", message: expect.stringMatching(/"localhost".*HOLM_WEBHOOK_ALLOW_PRIVATE=1/), retryable: false });
      expect(r.body.message).not.toMatch(/127\.0\.0\.1|::1/);
    }
    // A name that does not resolve is refused in the very same words: two answers would tell a
    // member which internal names exist (`.invalid` never resolves, RFC 6761).
    const resolvesPrivate = await call("POST", "/v1/webhooks", { url: "http://localhost/x", events: ["box.paused"] });
    const resolvesNot = await call("POST", "/v1/webhooks", { url: "http://no-such-host.invalid/x", events: ["box.paused"] });
    expect(resolvesNot.status, resolvesNot.text).toBe(400);
    expect(resolvesNot.body.message.replace('"no-such-host.invalid"', "<host>")).toBe(resolvesPrivate.body.message.replace('"localhost"', "<host>"));
    // An IP literal is the caller's own: the answer may name its range.
    const lit = await call("POST", "/v1/webhooks", { url: "http://127.0.0.1/x", events: ["box.paused"] });
    expect(lit.status).toBe(400);
    expect(lit.body.message).toContain("loopback");
  });

  it("a URL is stored as the sender will use it (parsed); control characters, surrounding spaces and port 0 are 400", async () => {
    for (const [url, says] of [
      ["http://8.8.8.8/a\r\nX-Injected: 1", "control character"],
      ["http://8.8.8.8/a\tb", "control character"],
      ["http://8.8.8.8/a\u0000", "control character"],
      [" http://8.8.8.8/a ", "space"],
      ["http://8.8.8.8/a\n", "control character"],
      ["http://8.8.8.8:0/", "port 0"],
    ] as const) {
      const r = await call("POST", "/v1/webhooks", { url, events: ["box.paused"] });
      expect(r.status, `${JSON.stringify(url)}: ${r.text}`).toBe(400);
      expect(r.body).toEqual({ code: "bad_request", message: expect.stringContaining(says), retryable: false });
    }
    for (const [url, stored] of [
      ["http:8.8.8.8/x", "http://8.8.8.8/x"],
      ["http:/\\8.8.8.8/x", "http://8.8.8.8/x"],
      ["HTTP://8.8.8.8:80/a b", "http://8.8.8.8/a%20b"],
      ["https://8.8.8.8", "https://8.8.8.8/"],
    ] as const) {
      const r = await call("POST", "/v1/webhooks", { url, events: ["box.paused"] });
      expect(r.status, `${url}: ${r.text}`).toBe(200);
      expect(r.body.url).toBe(stored);
      expect((await call("GET", `/v1/webhooks/${r.body.id}`)).body.url).toBe(stored);
      const patched = await call("PATCH", `/v1/webhooks/${r.body.id}`, { url: ` ${url}` });
      expect(patched.status, patched.text).toBe(400);
      await call("DELETE", `/v1/webhooks/${r.body.id}`);
    }
  });
});
