import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Member, Person } from "../support/console";
import { registerSecret } from "../support/log-secrets";
import { type TestServer, json, startServer } from "../support/server";
import { type Api, twoWorkspaces } from "../support/workspaces";
import { openStore, storeAtRest } from "../support/store";

// A workspace's secrets (004 secret_ref; /v1/secrets is a holm addition): set, listed and
// deleted through /v1 and the console, write-only (no answer, page, log line or store file ever
// has a value), each workspace's own, and closed to viewers. Their use by `fill` and `type` is
// tested with the element operations. No box is needed here.

let server: TestServer;
let asA: Api;
let asB: Api;
let c: Awaited<ReturnType<typeof twoWorkspaces>>["c"];
let ada: Person;
let vic: Member;
/** Every value this file stores: none may show anywhere but in the box it is typed into. */
const VALUES = ["s3cret-Value-One", "s3cret-Value-Two", "console-Value-Three"];
// Looked for in every server log of the run at its end (tests/support/log-secrets.ts).
for (const v of VALUES) registerSecret(v, "a workspace secret (secrets test)");

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
  ({ c, ada, asA, asB } = await twoWorkspaces(server));
  vic = await c.invite(ada, "vic@example.com", "viewer");
});

afterAll(async () => {
  await server?.stop();
});

const responses: string[] = [];
/** A /v1 call; every answer's text is kept, to check no value ever came back. */
async function call(api: Api, method: string, p: string, body?: unknown) {
  const res = await api(p, { method, json: body });
  const text = await res.text();
  responses.push(text);
  return { status: res.status, text, body: text ? JSON.parse(text) : undefined };
}

describe("secrets", () => {
  it("PUT answers name and dates, never the value; GET lists names; replacing keeps created_at_ms; DELETE 200 then 404", async () => {
    const put = await call(asA, "PUT", "/v1/secrets/LOGIN_PASSWORD", { value: VALUES[0] });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toEqual({ name: "LOGIN_PASSWORD", created_at_ms: expect.any(Number), updated_at_ms: put.body.created_at_ms });
    const again = await call(asA, "PUT", "/v1/secrets/LOGIN_PASSWORD", { value: VALUES[1] });
    expect(again.body).toMatchObject({ name: "LOGIN_PASSWORD", created_at_ms: put.body.created_at_ms });
    expect(again.body.updated_at_ms).toBeGreaterThanOrEqual(put.body.updated_at_ms);
    expect((await call(asA, "PUT", "/v1/secrets/api.token-2", { value: VALUES[0] })).status).toBe(200);

    const list = await call(asA, "GET", "/v1/secrets");
    expect(list.body).toEqual({
      secrets: [
        { name: "LOGIN_PASSWORD", created_at_ms: put.body.created_at_ms, updated_at_ms: again.body.updated_at_ms },
        { name: "api.token-2", created_at_ms: expect.any(Number), updated_at_ms: expect.any(Number) },
      ],
    });
    expect((await call(asA, "DELETE", "/v1/secrets/api.token-2")).body).toEqual({ name: "api.token-2", deleted: true });
    const gone = await call(asA, "DELETE", "/v1/secrets/api.token-2");
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ code: "not_found", message: 'no secret named "api.token-2"' });
  });

  it("a secret is its workspace's: another workspace (and the server token) neither sees nor deletes it, and its same name is its own", async () => {
    expect((await call(asB, "GET", "/v1/secrets")).body).toEqual({ secrets: [] });
    expect((await call(asB, "DELETE", "/v1/secrets/LOGIN_PASSWORD")).status).toBe(404);
    expect((await call(server.api, "GET", "/v1/secrets")).body).toEqual({ secrets: [] });
    expect((await call(server.api, "DELETE", "/v1/secrets/LOGIN_PASSWORD")).status).toBe(404);
    expect((await call(asB, "PUT", "/v1/secrets/LOGIN_PASSWORD", { value: VALUES[2] })).status).toBe(200);
    expect((await call(asB, "GET", "/v1/secrets")).body.secrets.map((s: any) => s.name)).toEqual(["LOGIN_PASSWORD"]);
    expect((await call(asB, "DELETE", "/v1/secrets/LOGIN_PASSWORD")).status).toBe(200);
    expect((await call(asA, "GET", "/v1/secrets")).body.secrets.map((s: any) => s.name)).toEqual(["LOGIN_PASSWORD"]);
  });

  it("a viewer lists names but cannot set or delete (409 denied), on /v1 and in the console", async () => {
    const csrf = c.csrfIn(await c.page(vic, "/settings"));
    const asVic: Api = (p, init = {}) => fetch(`${server.base}${p}`, {
      ...init,
      headers: { cookie: vic.cookie, "x-holm-csrf": csrf, ...(init.json !== undefined ? { "content-type": "application/json" } : {}) },
      body: init.json !== undefined ? JSON.stringify(init.json) : init.body,
    });
    expect((await call(asVic, "GET", "/v1/secrets")).body.secrets.map((s: any) => s.name)).toEqual(["LOGIN_PASSWORD"]);
    for (const [method, body] of [["PUT", { value: "viewer-value" }], ["DELETE", undefined]] as const) {
      const r = await call(asVic, method, "/v1/secrets/LOGIN_PASSWORD", body);
      expect(r.status, r.text).toBe(409);
      expect(r.body).toMatchObject({ code: "denied" });
    }
    // The console shows a viewer the names, with no form to change them; a forged form is refused.
    const html = await c.page(vic, "/settings");
    expect(html).toContain("LOGIN_PASSWORD");
    expect(html).not.toContain('name="value"');
    const forged = await c.form(vic, "/settings", { intent: "secret-put", name: "LOGIN_PASSWORD", value: "viewer-value", csrf });
    expect(await forged.text()).toContain("this needs the member role");
    expect((await call(asA, "GET", "/v1/secrets")).body.secrets).toHaveLength(1);
  });

  it("the console's Settings page adds, replaces and deletes secrets; the value field is a password field, never filled", async () => {
    const csrf = c.csrfIn(await c.page(ada, "/settings"));
    const saved = await c.form(ada, "/settings", { intent: "secret-put", name: "CONSOLE_SECRET", value: VALUES[2]!, csrf });
    expect(saved.status).toBe(200);
    const html = await c.page(ada, "/settings");
    expect(html).toContain("CONSOLE_SECRET");
    expect(html).toMatch(/<input[^>]*type="password"[^>]*name="value"|<input[^>]*name="value"[^>]*type="password"/);
    expect(html).not.toMatch(/name="value"[^>]*value=/);
    responses.push(await saved.text(), html);
    expect((await call(asA, "GET", "/v1/secrets")).body.secrets.map((s: any) => s.name)).toEqual(["LOGIN_PASSWORD", "CONSOLE_SECRET"]);
    const deleted = await c.form(ada, "/settings", { intent: "secret-delete", name: "CONSOLE_SECRET", csrf });
    expect(await deleted.text()).toContain("deleted");
    expect((await call(asA, "GET", "/v1/secrets")).body.secrets.map((s: any) => s.name)).toEqual(["LOGIN_PASSWORD"]);
  });

  it("bad names and bodies answer 400 naming the field, without quoting the value", async () => {
    const cases: [string, unknown, RegExp][] = [
      ["/v1/secrets/has%20space", { value: "hushhush-1" }, /^secret: a name is/],
      ["/v1/secrets/.hidden", { value: "hushhush-1" }, /^secret: a name is/],
      ["/v1/secrets/OK", {}, /^value: /],
      ["/v1/secrets/OK", { value: 12345 }, /^value: /],
      ["/v1/secrets/OK", { value: "" }, /^value: /],
      ["/v1/secrets/OK", { value: "hushhush-1", secret: "hushhush-1" }, /unknown key "secret"/],
      ["/v1/secrets/OK", { value: "hushhush-1".repeat(7000) }, /^value: .*at most 65536/],
    ];
    for (const [p, body, message] of cases) {
      const r = await call(asA, "PUT", p, body);
      expect(r.status, `${p} ${r.text}`).toBe(400);
      expect(r.body).toMatchObject({ code: "bad_request", retryable: false });
      expect(r.body.message).toMatch(message);
      expect(r.text).not.toContain("hushhush");
    }
    const res = await asA("/v1/secrets/OK", { method: "PUT", headers: { "content-type": "application/json" }, body: '{"value": hushhush-1}' });
    expect(res.status).toBe(400);
    expect(await res.text()).toBe(JSON.stringify({ code: "bad_request", message: "the body is not valid JSON", retryable: false }));
    expect((await call(asA, "GET", "/v1/secrets")).body.secrets.map((s: any) => s.name)).toEqual(["LOGIN_PASSWORD"]);
  });

  it("no value is in any answer, the server's log, or the store's files (sealed at rest)", async () => {
    for (const v of [...VALUES, "hushhush", "viewer-value"]) {
      for (const text of responses) expect(text).not.toContain(v);
      expect(server.logs()).not.toContain(v);
    }
    const files = storeAtRest(server);
    expect(files.map((f) => f.name)).toContain(server.store.kind === "sqlite" ? "holm.db" : "pg_dump");
    for (const { name, bytes } of files) {
      for (const v of VALUES) expect(bytes.includes(Buffer.from(v)), `${v} in ${name}`).toBe(false);
    }
    const db = openStore(server, { readonly: true });
    try {
      const rows = db.prepare("select owner, name, sealed from secrets").all() as { owner: string; name: string; sealed: string }[];
      expect(rows.map((r) => r.name)).toEqual(["LOGIN_PASSWORD"]);
      expect(rows[0]!.owner).toMatch(/^ws_/);
      expect(rows[0]!.sealed).toMatch(/^v1\.[A-Za-z0-9_-]+$/);
    } finally {
      db.close();
    }
    // Still there for the server to type.
    expect((await json(await asA("/v1/secrets"))).secrets).toHaveLength(1);
  });
});
