import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleClient } from "../support/console";
import { type TestServer, removeTestBoxes, startServer } from "../support/server";
import { openStore } from "../support/store";

// Accounts and sessions from the outside: who may sign up, cookies, CSRF, log-in limits,
// revocation on password change, and that only hashes are stored.

let server: TestServer;
let c: ReturnType<typeof consoleClient>;

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
  c = consoleClient(server);
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

const store = () => openStore(server, { readonly: true });
const login = (email: string, password: string) => c.form(undefined, "/login", { email, password, next: "/" });

describe("accounts", () => {
  let ada: Awaited<ReturnType<typeof c.signUp>>;

  it("the first account administers the server; later sign-ups need an invitation", async () => {
    ada = await c.signUp("ada@example.com", "A");
    const db = store();
    expect(db.prepare('select is_admin from "user" where email = ?').get("ada@example.com")).toEqual({ is_admin: 1 });
    db.close();
    const res = await c.form(undefined, "/signup", { name: "eve", email: "eve@example.com", password: "x".repeat(12), confirm: "x".repeat(12) });
    expect(res.headers.get("set-cookie")).toBeNull();
    expect(await res.text()).toContain("by invitation");
  });

  it("an invitation link makes only the invited account, and a refused sign-up leaves no account behind", async () => {
    // Sign-ups are closed (above); Ada invites kim. Someone else with the link tries other emails.
    const token = await c.inviteToken(ada, "kim@example.com", "member");
    const accounts = () => {
      const db = store();
      try {
        return (db.prepare('select email from "user" order by email').all() as { email: string }[]).map((r) => r.email);
      } finally {
        db.close();
      }
    };
    const before = accounts();
    const pw = "x".repeat(12);
    for (const email of ["eve@example.com", "eve2@example.com"]) {
      const res = await c.form(undefined, "/signup", { name: "eve", email, password: pw, confirm: pw, invite: token });
      expect(res.status).toBe(400);
      expect(res.headers.get("set-cookie")).toBeNull();
      expect(await res.text()).toContain("this invitation is for kim@example.com");
    }
    expect(accounts()).toEqual(before);
    expect((await login("eve@example.com", pw)).status).toBe(401);
    // The link still works for the person it was made for, once.
    const kim = await c.form(undefined, "/signup", { name: "kim", email: "kim@example.com", password: pw, confirm: pw, invite: token });
    expect(kim.status, await kim.clone().text()).toBe(302);
    const again = await c.form(undefined, "/signup", { name: "kim", email: "kim2@example.com", password: pw, confirm: pw, invite: token });
    expect(again.status).toBe(400);
    expect(accounts()).toEqual([...before, "kim@example.com"].sort());

    // With sign-ups open, a workspace name the form refuses leaves no account either: the person
    // corrects the name and signs up with the same email.
    const open = await c.form(ada, "/settings", { intent: "signups", open: "true", csrf: c.csrfIn(await c.page(ada, "/settings")) });
    expect(open.status).toBeLessThan(400);
    const long = await c.form(undefined, "/signup", { name: "lee", email: "lee@example.com", password: pw, confirm: pw, workspace: "w".repeat(81) });
    expect(long.status).toBe(400);
    expect(await long.text()).toContain("a workspace name is 1 to 80 characters");
    expect(accounts()).not.toContain("lee@example.com");
    const lee = await c.form(undefined, "/signup", { name: "lee", email: "lee@example.com", password: pw, confirm: pw, workspace: "Lee's" });
    expect(lee.status).toBe(302);
    const closed = await c.form(ada, "/settings", { intent: "signups", open: "false", csrf: c.csrfIn(await c.page(ada, "/settings")) });
    expect(closed.status).toBeLessThan(400);
  });

  it("a person's, a key's or a workspace's name that would show as another (direction override, invisible characters) or that has no end is refused", async () => {
    // Others read these names where it matters: "Ada has control", "Ada took over screen 0",
    // "key agent-1" in a trace, the members table, the workspace switcher. "\u202Enimda" shows as
    // "admin"; "agent\u200B" looks exactly like "agent".
    const pw = "x".repeat(12);
    const token = await c.inviteToken(ada, "mal@example.com", "member");
    const refusedSignUp = async (name: string, said: string) => {
      const res = await c.form(undefined, "/signup", { name, email: "mal@example.com", password: pw, confirm: pw, invite: token });
      expect(res.status).toBe(400);
      expect(res.headers.get("set-cookie")).toBeNull();
      expect(await res.text()).toContain(said);
    };
    await refusedSignUp("\u202Enimda", "a name has no invisible or direction-changing characters");
    await refusedSignUp("Ada\u2066", "a name has no invisible or direction-changing characters");
    await refusedSignUp("Ada\u0007", "a name has no control characters");
    await refusedSignUp("m".repeat(81), "a name has at most 80 characters");
    expect((await login("mal@example.com", pw)).status).toBe(401);
    // Right-to-left scripts are names like any other.
    const mal = await c.form(undefined, "/signup", { name: "\u05de\u05dc", email: "mal@example.com", password: pw, confirm: pw, invite: token });
    expect(mal.status, await mal.clone().text()).toBe(302);

    const keyForm = async (name: string) => (await c.form(ada, "/keys?index", { intent: "create", name, csrf: c.csrfIn(await c.page(ada, "/keys")) })).text();
    expect(await keyForm("agent\u200B")).toContain("a key name has no invisible or direction-changing characters");
    expect(await keyForm("\u202Etnega")).toContain("a key name has no invisible or direction-changing characters");
    expect(await c.page(ada, "/keys")).not.toMatch(/agent\u200B|\u202Etnega/);

    const wsForm = async (name: string) => (await c.form(ada, "/workspaces/new", { name, csrf: c.csrfIn(await c.page(ada, "/keys")) })).text();
    expect(await wsForm("\u202Ehcraeser")).toContain("a workspace name has no invisible or direction-changing characters");
    expect(await wsForm("Research\u0000")).toContain("a workspace name has no control characters");
  });

  it("sets a HttpOnly, SameSite session cookie and stores only hashes of tokens, passwords and keys", async () => {
    const res = await login("ada@example.com", "correct horse battery");
    expect(res.status).toBe(302);
    const set = res.headers.get("set-cookie")!;
    expect(set).toMatch(/HttpOnly/);
    expect(set).toMatch(/SameSite=Lax/);
    const token = /holm_session=([^;]+)/.exec(set)![1]!;
    const key = await c.createKey(ada, "stored");
    const db = store();
    const dump = JSON.stringify([
      db.prepare("select * from session").all(),
      db.prepare("select * from api_key").all(),
      db.prepare('select * from "user"').all(),
    ]);
    db.close();
    expect(dump).not.toContain(token);
    expect(dump).not.toContain(key.secret);
    expect(dump).not.toContain("correct horse battery");
    expect(dump).toContain("scrypt$");
  });

  it("refuses a console form without the CSRF token, or from another origin", async () => {
    const noToken = await c.form(ada, "/keys?index", { intent: "create", name: "sneaky" });
    expect(noToken.status).toBe(400);
    expect(await noToken.text()).toContain("reload the page");
    const csrf = c.csrfIn(await c.page(ada, "/keys"));
    const crossSite = await c.form(ada, "/keys?index", { intent: "create", name: "sneaky", csrf }, { origin: "http://evil.example" });
    expect(crossSite.status).toBe(403);
    expect(await c.page(ada, "/keys")).not.toContain("sneaky");
  });

  it("switching workspace goes back to the page it was made on, never to another site; refusals are 400, not errors", async () => {
    const mine = await c.form(ada, "/workspaces/new", { name: "Second", csrf: c.csrfIn(await c.page(ada, "/keys")) });
    expect(mine.status).toBe(302);
    const html = await c.page(ada, "/keys");
    // The switcher's list as drawn without script (its <noscript> form): a button per workspace.
    const ids = [...new Set([...html.matchAll(/<button type="submit" value="(ws_[0-9a-f]+)"[^>]* name="workspace"/g)].map((m) => m[1]!))];
    expect(ids.length, "the switcher lists both workspaces").toBeGreaterThanOrEqual(2);
    const csrf = c.csrfIn(html);
    const sw = (referer: string | undefined, workspace = ids[0]!) => c.form(ada, "/workspace", { workspace, csrf }, referer === undefined ? {} : { referer });
    const where = async (referer: string | undefined) => {
      const res = await sw(referer);
      expect(res.status, referer).toBe(302);
      return res.headers.get("location");
    };
    expect(await where(`${server.base}/keys`)).toBe("/keys");
    expect(await where(undefined)).toBe("/");
    // A path a browser reads as another host, and a Referer that is no address at all.
    expect(await where(`${server.base}//evil.example/path`)).toBe("/");
    expect(await where(`${server.base}/\\evil.example/x`)).toBe("/");
    expect(await where("not a url")).toBe("/");
    // Another person's workspace, and a form without its token: refused, the session's workspace kept.
    const db = store();
    const leeWs = (db.prepare('select workspace_id from membership join "user" on "user".id = membership.user_id where email = ?').get("lee@example.com") as { workspace_id: string }).workspace_id;
    db.close();
    expect(ids, "Lee's workspace, not Ada's").not.toContain(leeWs);
    const other = await sw(`${server.base}/keys`, leeWs);
    expect(other.status).toBe(400);
    expect(await other.text()).toContain("no such workspace of yours");
    const stale = await c.form(ada, "/workspace", { workspace: ids[1]! }, { referer: `${server.base}/keys` });
    expect(stale.status).toBe(400);
    // Logging out without the token (a cross-site form would have none) keeps the session.
    const out = await c.form(ada, "/logout", {});
    expect(out.status).toBe(400);
    expect(await c.page(ada, "/keys")).toContain("API keys");
  });

  it("a request carrying two session cookies is trusted with neither (one planted from another port of the host)", async () => {
    const lee = await login("lee@example.com", "x".repeat(12));
    expect(lee.status).toBe(302);
    const planted = lee.headers.get("set-cookie")!.split(";")[0]!;
    expect(await c.page({ cookie: planted }, "/settings")).toContain("Secrets");
    // The planted cookie first, as a browser sends one set for the longer path /settings.
    for (const [order, cookie] of Object.entries({ "planted first": `${planted}; ${ada.cookie}`, "planted last": `${ada.cookie}; ${planted}` })) {
      const res = await fetch(`${server.base}/settings`, { headers: { cookie }, redirect: "manual" });
      expect(res.status, order).toBe(302);
      expect(res.headers.get("location")).toContain("/login");
      const api = await fetch(`${server.base}/v1/boxes`, { headers: { cookie } });
      expect(api.status).toBe(401);
    }
    expect(await c.page(ada, "/settings")).toContain("Secrets");
  });

  it("rate-limits failed log-ins per account, even with the right password after", async () => {
    for (let i = 0; i < 8; i++) expect((await login("ada@example.com", "wrong password!!")).status).toBe(401);
    const blocked = await login("ada@example.com", "correct horse battery");
    expect(blocked.status).toBe(400);
    expect(await blocked.text()).toContain("too many failed attempts");
  });

  it("ends every session when the password changes", async () => {
    const other = ada; // a session from sign-up
    const csrf = c.csrfIn(await c.page(other, "/settings"));
    const res = await c.form(other, "/settings", {
      intent: "password",
      current: "correct horse battery",
      next: "a brand new passphrase",
      confirm: "a brand new passphrase",
      csrf,
    });
    expect(res.status).toBe(302);
    const fresh = { cookie: res.headers.get("set-cookie")!.split(";")[0]! };
    // The old cookie no longer opens the console; the fresh one does.
    const old = await fetch(`${server.base}/keys`, { headers: { cookie: other.cookie }, redirect: "manual" });
    expect(old.status).toBe(302);
    expect(old.headers.get("location")).toContain("/login");
    expect(await c.page(fresh, "/keys")).toContain("API keys");
  });
});
