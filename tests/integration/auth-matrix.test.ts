import path from "node:path";
import SQLite from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { v1Routes } from "../../app/routes";
import { consoleClient } from "../support/console";
import { ROOT, type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// Every /v1 route × every credential that must not work, built from the router's own list so
// a new route cannot be forgotten. People and keys are made through the console, as a person
// would; only the expiry of one key is moved into the past directly in the store.

let server: TestServer;

let boxA: string;
const creds: Record<string, string | undefined> = {};
/** Console sessions on /v1: the cookie, and the CSRF header a console page would send. */
const sessions: Record<string, { cookie: string; csrf?: string }> = {};

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
  const { form, page, csrfIn, signUp, createKey, invite } = consoleClient(server);
  const ada = await signUp("ada@example.com", "A"); // first account: administers the server
  await form(ada, "/settings", { intent: "signups", open: "true", csrf: csrfIn(await page(ada, "/settings")) });
  const bob = await signUp("bob@example.com", "B");
  const good = await createKey(ada, "good");
  const revoked = await createKey(ada, "revoked");
  const expired = await createKey(ada, "expired");
  const other = await createKey(bob, "other");
  const vic = await signUp("vic@example.com", "", "correct horse battery", await invite(ada, "vic@example.com", "viewer"));
  const login = await form(undefined, "/login", { email: "ada@example.com", password: "correct horse battery", next: "/" });
  const ended = { cookie: login.headers.get("set-cookie")!.split(";")[0]! };
  expect((await form(ended, "/logout", { csrf: csrfIn(await page(ended, "/keys")) })).status).toBe(302);

  const res = await fetch(`${server.base}/v1/boxes`, {
    method: "POST",
    headers: { authorization: `Bearer ${good.secret}`, "content-type": "application/json" },
    body: "{}",
  });
  const box = await json(res);
  expect(res.status, JSON.stringify(box)).toBe(200);
  boxA = box.id;

  // Used once, so the key cache holds them as valid: revocation must still bite at once.
  for (const k of [revoked, expired]) {
    expect((await fetch(`${server.base}/v1/boxes`, { headers: { authorization: `Bearer ${k.secret}` } })).status).toBe(200);
  }
  const csrf = csrfIn(await page(ada, "/keys"));
  expect((await form(ada, "/keys?index", { intent: "revoke", id: revoked.id, csrf })).status).toBe(200);
  const db = new SQLite(path.join(server.stateDir, "holm.db"));
  db.prepare("update api_key set expires_at_ms = ? where id = ?").run(Date.now() - 1000, expired.id);
  db.close();
  // The expired key was cached as valid a moment ago; its expiry is checked on each use, but the
  // row change reaches the cache only after its short TTL.
  await new Promise((r) => setTimeout(r, 5500));

  creds.none = undefined;
  creds.wrong_token = "Bearer not-the-server-token-at-all";
  creds.revoked_key = `Bearer ${revoked.secret}`;
  creds.expired_key = `Bearer ${expired.secret}`;
  creds.other_workspace_key = `Bearer ${other.secret}`;
  creds.good_key = `Bearer ${good.secret}`;

  sessions.logged_out_session = { cookie: ended.cookie, csrf: "x" };
  sessions.session_without_csrf = { cookie: ada.cookie };
  sessions.viewer_session = { cookie: vic.cookie, csrf: csrfIn(await page(vic, "/keys")) };
  sessions.other_workspace_session = { cookie: bob.cookie, csrf: csrfIn(await page(bob, "/keys")) };
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

const ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

async function routeTable() {
  const rows: { path: string; file: string; methods: string[] }[] = [];
  for (const r of v1Routes) {
    if (r.path === "v1/*") continue;
    const mod = await import(path.join(ROOT, "app", r.file));
    const methods = (mod.handle?.methods ?? []) as string[];
    rows.push({ path: r.path!, file: r.file, methods });
  }
  return rows;
}

function concrete(p: string) {
  return `/${p}`
    .replace(":id", boxA)
    .replace(":screen", "0")
    .replace(":window", "0x00000001")
    .replace(":hash", "0".repeat(40));
}

function call(method: string, url: string, auth: string | undefined, session?: { cookie: string; csrf?: string }) {
  const headers: Record<string, string> = { "x-holm-confirm-delete": "true" };
  if (auth) headers.authorization = auth;
  if (session) headers.cookie = session.cookie;
  if (session?.csrf) headers["x-holm-csrf"] = session.csrf;
  let body: string | undefined;
  if (method !== "GET" && method !== "DELETE") {
    headers["content-type"] = "application/json";
    // Never a valid body: a credential that wrongly works must not launch or change anything.
    body = '{"__matrix__": true}';
  }
  return fetch(`${server.base}${url}`, { method, headers, body });
}

describe("auth matrix", () => {
  it("every route declares the methods it serves (others answer 405)", async () => {
    const table = await routeTable();
    expect(table.length).toBeGreaterThan(25);
    for (const { path: p, methods } of table) {
      expect(methods.length, p).toBeGreaterThan(0);
      for (const m of ALL_METHODS.filter((x) => !methods.includes(x))) {
        const res = await call(m, concrete(p), `Bearer ${server.token}`);
        expect(res.status, `${m} ${p}`).toBe(405);
      }
    }
  });

  it("refuses every bad credential on every route, and another workspace sees nothing of ours", async () => {
    const table = await routeTable();
    let checked = 0;
    const leaks: string[] = [];
    for (const { path: p, methods } of table) {
      for (const method of methods) {
        const url = concrete(p);
        for (const [name, auth] of Object.entries(creds)) {
          if (name === "good_key") continue;
          const res = await call(method, url, auth);
          const text = await res.text();
          const where = `${method} ${p} with ${name}: ${res.status} ${text.slice(0, 200)}`;
          checked++;
          // Refusals may echo the id that was asked for; an answer that succeeds must not carry it.
          if (res.ok && text.includes(boxA)) leaks.push(where);
          if (p === "v1/health") {
            expect(res.status, where).toBe(200);
            continue;
          }
          if (name !== "other_workspace_key") {
            expect(res.status, where).toBe(401);
            expect(JSON.parse(text), where).toMatchObject({ code: "unauthorized", retryable: false });
            continue;
          }
          // Another workspace's key: its own scope works, ours does not exist for it.
          const body = JSON.parse(text);
          if (p.includes(":id")) {
            expect(res.status, where).toBe(404);
            expect(body.code, where).toBe("not_found");
          } else if (p.startsWith("v1/jobs/")) {
            expect(res.status, where).toBe(409);
            expect(body.code, where).toBe("denied");
          } else if (method === "GET") {
            expect(res.status, where).toBe(200);
          } else {
            expect(res.status, where).toBe(400);
            expect(body.code, where).toBe("bad_request");
          }
        }
      }
    }
    console.log(`[auth matrix] ${table.length} routes, ${checked} route×method×credential checks, ${leaks.length} leaks`);
    expect(leaks).toEqual([]);
    expect(checked).toBeGreaterThan(100);
  });

  it("a console session on /v1 is that person: refused when logged out, without CSRF, as a viewer, or in another workspace", async () => {
    const table = await routeTable();
    let checked = 0;
    const leaks: string[] = [];
    for (const { path: p, methods } of table) {
      if (p === "v1/health") continue;
      for (const method of methods) {
        const url = concrete(p);
        for (const [name, session] of Object.entries(sessions)) {
          const change = method !== "GET";
          // Ada's own session and her viewer's may read what is hers; only changes are checked.
          if ((name === "session_without_csrf" || name === "viewer_session") && !change) continue;
          const res = await call(method, url, undefined, session);
          const text = await res.text();
          const where = `${method} ${p} with ${name}: ${res.status} ${text.slice(0, 200)}`;
          checked++;
          // A change that goes through, or an answer that shows our box, is a leak.
          if (res.ok && (change || text.includes(boxA))) leaks.push(where);
          const body = JSON.parse(text);
          if (name === "logged_out_session") {
            expect(res.status, where).toBe(401);
            expect(body.code, where).toBe("unauthorized");
          } else if (name === "session_without_csrf") {
            expect(res.status, where).toBe(403);
            expect(body.code, where).toBe("denied");
          } else if (name === "viewer_session") {
            // A viewer may ask for a (view) ticket; the matrix's body is never valid.
            expect(res.status, where).toBe(p.endsWith("viewer/ticket") ? 400 : 409);
          } else if (p.includes(":id")) {
            expect(res.status, where).toBe(404);
          } else if (p.startsWith("v1/jobs/")) {
            expect(res.status, where).toBe(409);
          } else if (!change) {
            // Another workspace reads its own (empty) lists.
            expect(res.status, where).toBe(200);
          } else {
            expect(res.status, where).toBe(400);
          }
        }
      }
    }
    console.log(`[auth matrix] sessions: ${checked} route×method×session checks, ${leaks.length} leaks`);
    expect(leaks).toEqual([]);
    expect(checked).toBeGreaterThan(100);
  });

  it("the good key sees its own box", async () => {
    const res = await call("GET", `/v1/boxes/${boxA}`, creds.good_key);
    expect(res.status).toBe(200);
    expect((await json(res)).owner).toMatch(/^ws_/);
  });
});
