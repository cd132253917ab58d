import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentFetchAs } from "../support/box-auth";
import { Page, boxIp } from "../support/cdp";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { SITE, serveSite } from "../support/site";
import { type Api, twoWorkspaces } from "../support/workspaces";
import { openStore, storeAtRest } from "../support/store";

// Browser state and cookies (seed 000: Browser state) on a real box, against pages served in the
// box (tests/fixtures/site/state-*.html): what a route did is checked from the page's side (what
// the page reads and what the site is sent), never by trusting the route's answer alone.

let server: TestServer;
let asA: Api;
let asB: Api;
let box: { id: string };

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
  ({ asA, asB } = await twoWorkspaces(server));
  const res = await asA("/v1/boxes", { method: "POST", json: {} });
  box = await json(res);
  expect(res.status, JSON.stringify(box)).toBe(200);
  await serveSite(server, box.id);
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

const call = async (api: Api, method: string, p: string, body?: unknown) => {
  const res = await api(`/v1/boxes/${box.id}${p}`, { method, json: body });
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : undefined };
};
const ok = async (api: Api, method: string, p: string, body?: unknown) => {
  const r = await call(api, method, p, body);
  expect(r.status, `${method} ${p}: ${r.text}`).toBe(200);
  return r.body;
};

/** Opens `url` in the front tab (open_url) and answers what the page saw once it has loaded. */
async function openAndSee(url: string, what = "window.seen"): Promise<any> {
  await ok(asA, "POST", "/screens/0/actions", { actions: [{ type: "open_url", url, target: "current" }] });
  const page = await Page.open(server, box.id);
  try {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const href = await page.evaluate<string>("location.href").catch(() => "");
      const seen = href === url ? await page.evaluate(what).catch(() => undefined) : undefined;
      if (seen !== undefined && seen !== null) return seen;
      if (Date.now() > deadline) throw new Error(`${url} showed nothing (${href})`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    page.close();
  }
}

/** Runs JavaScript in the front tab (for clearing storage behind the routes' back). */
async function inFrontTab(expression: string): Promise<unknown> {
  const page = await Page.open(server, box.id);
  try {
    return await page.evaluate(expression);
  } finally {
    page.close();
  }
}

/** The front tab's id and how many tabs screen 0's Chromium has (DevTools' own list). */
async function tabs(): Promise<{ front: string; count: number }> {
  const res = await agentFetchAs(server, box.id, await boxIp(box.id), "/screens/0/cdp/json/list");
  const list = ((await res.json()) as { id: string; type: string }[]).filter((t) => t.type === "page");
  return { front: list[0]!.id, count: list.length };
}

const APP = `${SITE}/state-app.html`;
const BLANK = "data:text/html,<title>elsewhere</title>";

describe("browser state", () => {
  it('the seed\'s save body as written, then `{"name": "work"}`: cleared cookies and storage come back (000: Browser state)', async () => {
    // The first Playwright use of this server: the tab was opened (by the agent) before the
    // server attached, so its storage is read from the tab itself.
    const before = await openAndSee(`${APP}?set=one`);
    expect(before).toMatchObject({ cookie: "visit=one", local: { theme: "dark-one" } });
    const saved = await ok(asA, "POST", "/state/save", { origins: [], name: "work", session_storage: false, indexed_db: false, no_local_storage: false });
    expect(saved).toMatchObject({ name: "work", cookies: 1, origins: 1 });
    expect(saved.size).toBeGreaterThan(0);
    // Saved by name: the answer has no state, so no value.
    expect(JSON.stringify(saved)).not.toMatch(/one/);
    expect((await json(await asA("/v1/states"))).states).toEqual([expect.objectContaining({ name: "work", size: saved.size })]);

    expect(await ok(asA, "DELETE", "/cookies")).toMatchObject({ cleared: 1 });
    await inFrontTab("localStorage.clear()");
    expect(await openAndSee(APP)).toMatchObject({ cookie: "", sent: "", local: {} });

    const loaded = await ok(asA, "POST", "/state/load", { name: "work" });
    expect(loaded).toMatchObject({ cookies: 1, origins: 1, skipped: [] });
    expect(await openAndSee(APP)).toMatchObject({ cookie: "visit=one", sent: "visit=one", local: { theme: "dark-one" } });
  });

  it("save with no name answers `session_json` (Playwright's storage-state format); loading it brings the state back", async () => {
    await openAndSee(`${APP}?set=two`);
    const saved = await ok(asA, "POST", "/state/save", { session_storage: true });
    expect(saved.name).toBeUndefined();
    const state = JSON.parse(saved.session_json);
    expect(state.cookies).toEqual([expect.objectContaining({ name: "visit", value: "two", domain: "127.0.0.1", path: "/", httpOnly: false, sameSite: expect.any(String) })]);
    expect(state.origins).toEqual([
      { origin: SITE, localStorage: [{ name: "theme", value: "dark-two" }], sessionStorage: [{ name: "draft", value: "draft-two" }] },
    ]);
    // Not kept: listing shows only what was saved by name.
    expect((await json(await asA("/v1/states"))).states.map((s: any) => s.name)).toEqual(["work"]);

    await ok(asA, "DELETE", `/cookies?url=${encodeURIComponent(SITE)}`);
    await inFrontTab("localStorage.clear(); sessionStorage.clear()");
    expect(await openAndSee(APP)).toMatchObject({ cookie: "", local: {}, session: {} });
    const loaded = await ok(asA, "POST", "/state/load", { session_json: saved.session_json });
    expect(loaded).toMatchObject({ cookies: 1, origins: 1, skipped: [] });
    // sessionStorage belongs to a tab: it went into the tab open at the origin.
    expect(await inFrontTab("sessionStorage.getItem('draft')")).toBe("draft-two");
    expect(await openAndSee(APP)).toMatchObject({ cookie: "visit=two", sent: "visit=two", local: { theme: "dark-two" }, session: { draft: "draft-two" } });
  });

  it("loads into an origin no tab has open through a scratch tab, and the front tab stays at the front", async () => {
    await openAndSee(`${APP}?set=three`);
    await ok(asA, "POST", "/state/save", { name: "three", session_storage: true });
    await ok(asA, "DELETE", "/cookies");
    await inFrontTab("localStorage.clear(); sessionStorage.clear()");
    expect(await openAndSee(BLANK, "document.title")).toBe("elsewhere");
    const before = await tabs();
    const loaded = await ok(asA, "POST", "/state/load", { name: "three" });
    // sessionStorage belongs to a tab: with none at the origin it is said to be left out.
    expect(loaded).toMatchObject({ cookies: 1, origins: 1, skipped: [{ origin: SITE, what: "session_storage", why: expect.any(String) }] });
    expect(await tabs()).toEqual(before);
    expect(await openAndSee(APP)).toMatchObject({ cookie: "visit=three", local: { theme: "dark-three" }, session: {} });
  });

  it("indexed_db: true keeps IndexedDB (a Date too) and loading puts the records back", async () => {
    expect(await openAndSee(`${SITE}/state-idb.html?put=kept`, "window.idb")).toEqual([{ id: "k1", v: "kept", at: "1970-01-02T00:00:00.000Z" }]);
    const saved = await ok(asA, "POST", "/state/save", { indexed_db: true, origins: [SITE] });
    const origin = JSON.parse(saved.session_json).origins[0];
    expect(origin.indexedDB).toEqual([expect.objectContaining({ name: "app", version: 1, stores: [expect.objectContaining({ name: "things", keyPath: "id" })] })]);
    // Without indexed_db the state has none.
    expect(JSON.parse((await ok(asA, "POST", "/state/save", {})).session_json).origins[0].indexedDB).toBeUndefined();

    await openAndSee(APP);
    await inFrontTab(`new Promise((ok) => { const d = indexedDB.deleteDatabase("app"); d.onsuccess = d.onerror = () => ok(true); })`);
    expect(await openAndSee(`${SITE}/state-idb.html`, "window.idb")).toEqual([]);
    await openAndSee(BLANK, "document.title");
    expect(await ok(asA, "POST", "/state/load", { session_json: saved.session_json })).toMatchObject({ skipped: [] });
    expect(await openAndSee(`${SITE}/state-idb.html`, "window.idb")).toEqual([{ id: "k1", v: "kept", at: "1970-01-02T00:00:00.000Z" }]);
  });

  it("origins keeps only those origins' storage and cookies; no_local_storage leaves localStorage out", async () => {
    await ok(asA, "POST", "/cookies", { url: "https://example.com", cookies: [{ name: "elsewhere", value: "x" }] });
    await openAndSee(`${APP}?set=four`);
    const all = JSON.parse((await ok(asA, "POST", "/state/save", {})).session_json);
    expect(all.cookies.map((c: any) => c.domain).sort()).toEqual(["127.0.0.1", "example.com"]);
    const only = JSON.parse((await ok(asA, "POST", "/state/save", { origins: [`${SITE}/any/path`] })).session_json);
    expect(only.cookies.map((c: any) => c.name)).toEqual(["visit"]);
    expect(only.origins.map((o: any) => o.origin)).toEqual([SITE]);
    const none = JSON.parse((await ok(asA, "POST", "/state/save", { origins: ["https://example.com"] })).session_json);
    expect(none).toEqual({ cookies: [expect.objectContaining({ name: "elsewhere" })], origins: [] });
    const noLocal = JSON.parse((await ok(asA, "POST", "/state/save", { no_local_storage: true, session_storage: true })).session_json);
    expect(noLocal.origins).toEqual([{ origin: SITE, localStorage: [], sessionStorage: [{ name: "draft", value: "draft-four" }] }]);
  });

  it("a Playwright storage-state file loads as session_json, for an https origin the box cannot reach; saving then finds it", async () => {
    await ok(asA, "DELETE", `/cookies?url=${encodeURIComponent("https://example.com/")}`);
    await openAndSee(BLANK, "document.title");
    const before = await tabs();
    const file = {
      cookies: [{ name: "pw", value: "from-file", domain: "example.com", path: "/", expires: -1, httpOnly: false, secure: true, sameSite: "Lax" }],
      origins: [{ origin: "https://example.com", localStorage: [{ name: "k", value: "from-file" }] }],
    };
    expect(await ok(asA, "POST", "/state/load", { session_json: JSON.stringify(file) })).toEqual({ cookies: 1, origins: 1, skipped: [] });
    expect(await tabs()).toEqual(before);
    const saved = JSON.parse((await ok(asA, "POST", "/state/save", { origins: ["https://example.com"] })).session_json);
    expect(saved).toEqual({ cookies: [expect.objectContaining({ name: "pw", value: "from-file", secure: true })], origins: file.origins });
  });
});

describe("cookies", () => {
  // The seed's "Set cookies" body, verbatim. Setting a cookie needs no network, so
  // https://example.com works as written; the same cookies through http://127.0.0.1:8000 (the
  // site in the box: a box has no internet) show what the site is sent.
  const SEED = {
    url: "https://example.com",
    cookies: [{ name: "session", value: "…", http_only: true, secure: true, same_site: "Lax", expires: 1790000000 }],
  };

  it("the seed's Set cookies example as written; GET answers every field in snake_case (000: Browser state)", async () => {
    await ok(asA, "DELETE", "/cookies");
    // Its expires (2026-09-21) may have passed: the browser then removes the cookie at once,
    // and the answer says so.
    const expired = SEED.cookies[0]!.expires * 1000 <= Date.now();
    expect(await ok(asA, "POST", "/cookies", SEED)).toEqual({ set: 1, expired: expired ? ["session"] : [] });
    const url = `/cookies?url=${encodeURIComponent("https://example.com/some/page")}`;
    expect((await ok(asA, "GET", url)).cookies).toHaveLength(expired ? 0 : 1);
    // The same with an expiry to come.
    const expires = Math.floor(Date.now() / 1000) + 3600;
    expect(await ok(asA, "POST", "/cookies", { ...SEED, cookies: [{ ...SEED.cookies[0], expires }] })).toEqual({ set: 1, expired: [] });
    expect(await ok(asA, "GET", url)).toEqual({
      cookies: [{ name: "session", value: "…", domain: "example.com", path: "/", expires, http_only: true, secure: true, same_site: "Lax" }],
    });
    // A URL the cookie does not go to: none.
    expect(await ok(asA, "GET", `/cookies?url=${encodeURIComponent("https://example.org/")}`)).toEqual({ cookies: [] });
  });

  it("cookies set for the site in the box reach it (HttpOnly: sent, not shown to scripts); domain and path are accepted", async () => {
    // The example's secure cookie through http://127.0.0.1 (the site in the box): Chromium
    // counts loopback as a secure context, so it is kept and sent.
    const expires = Math.floor(Date.now() / 1000) + 3600;
    expect(await ok(asA, "POST", "/cookies", { ...SEED, url: SITE, cookies: [{ ...SEED.cookies[0], expires }] })).toMatchObject({ set: 1 });
    expect(await ok(asA, "POST", "/cookies", { url: SITE, cookies: [{ name: "plain", value: "p1", secure: false }] })).toMatchObject({ set: 1 });
    expect(await ok(asA, "POST", "/cookies", { cookies: [{ name: "scoped", value: "s1", domain: "127.0.0.1", path: "/state-app.html" }] })).toMatchObject({ set: 1 });
    const seen = await openAndSee(APP);
    expect(seen.cookie.split("; ").sort()).toEqual(["plain=p1", "scoped=s1"]);
    // The page's fetch of /echo is sent the cookies of path "/": not scoped's.
    expect(seen.sent.split("; ").map((c: string) => c.split("=")[0]).sort()).toEqual(["plain", "session"]);
    const listed = await ok(asA, "GET", `/cookies?url=${encodeURIComponent(`${SITE}/state-app.html`)}`);
    expect(listed.cookies.map((c: any) => [c.name, c.http_only, c.secure, c.path]).sort()).toEqual([
      ["plain", false, false, "/"],
      ["scoped", false, false, "/state-app.html"],
      ["session", true, true, "/"],
    ]);
  });

  it("`tab` (a holm addition) picks the browser of the screen that has the tab; an unknown tab is 404", async () => {
    const { front } = await tabs();
    expect(await ok(asA, "GET", `/cookies?tab=${front}`)).toEqual(await ok(asA, "GET", "/cookies"));
    const r = await call(asA, "GET", "/cookies?tab=no-such-tab");
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ code: "not_found" });
    expect((await call(asA, "POST", "/state/save?tab=no-such-tab", {})).status).toBe(404);
  });

  it("DELETE with url clears the cookies that URL would be sent, and no others; without url, all", async () => {
    const count = async () => (await ok(asA, "GET", "/cookies")).cookies.length;
    const all = await count();
    expect(all).toBe(4);
    // http://127.0.0.1:8000/ is sent plain and session (the secure one: loopback), not scoped.
    expect(await ok(asA, "DELETE", `/cookies?url=${encodeURIComponent(`${SITE}/`)}`)).toEqual({ cleared: 2 });
    expect((await ok(asA, "GET", "/cookies")).cookies.map((c: any) => `${c.domain}:${c.name}`).sort()).toEqual(["127.0.0.1:scoped", "example.com:session"]);
    expect(await ok(asA, "DELETE", "/cookies")).toEqual({ cleared: 2 });
    expect(await count()).toBe(0);
  });
});

describe("refusals", () => {
  it("bad bodies and queries answer 400 naming the field, and never quote a value", async () => {
    const cases: [string, string, unknown, RegExp][] = [
      ["POST", "/state/save", { name: "no spaces" }, /^name: a name is/],
      ["POST", "/state/save", { origins: ["ftp://example.com"] }, /^origins\.0: an http/],
      ["POST", "/state/save", { session_storage: "yes" }, /^session_storage: /],
      ["POST", "/state/save", { nmae: "work" }, /unknown key "nmae"/],
      ["POST", "/state/load", {}, /give `name` or `session_json`/],
      ["POST", "/state/load", { name: "work", session_json: "{}" }, /give `name` or `session_json`/],
      ["POST", "/state/load", { session_json: '{"cookies": [{"name": "k", "value": "hushhush"' }, /^session_json: not valid JSON/],
      ["POST", "/state/load", { session_json: '{"cookies": [{"name": "k", "value": "hushhush"}]}' }, /^session_json: cookies\.0\.domain: /],
      ["POST", "/state/load", { session_json: '{"origins": [{"origin": "x", "localStorage": [{"name": "k"}]}]}' }, /^session_json: origins\.0\.localStorage\.0\.value: /],
      ["POST", "/cookies", { cookies: [{ name: "k", value: "hushhush" }] }, /^cookies\.0\.domain: a cookie needs `domain`/],
      ["POST", "/cookies", { url: SITE, cookies: [{ name: "k", value: "hushhush", same_site: "lax" }] }, /^cookies\.0\.same_site: /],
      ["POST", "/cookies", { url: SITE, cookies: [{ name: "k", value: "hushhush", expires: -5 }] }, /^cookies\.0\.expires: Unix seconds/],
      ["POST", "/cookies", { url: SITE, cookies: [{ name: "k", value: "hushhush", path: "relative" }] }, /^cookies\.0\.path: /],
      ["POST", "/cookies", { url: "not a url", cookies: [{ name: "k", value: "hushhush" }] }, /^url: an http/],
      ["POST", "/cookies", { url: SITE, cookies: [] }, /^cookies: /],
      ["GET", "/cookies?url=javascript:alert(1)", undefined, /^url: an http/],
      ["DELETE", "/cookies?domain=x", undefined, /unknown key "domain"/],
    ];
    for (const [method, p, body, message] of cases) {
      const r = await call(asA, method, p, body);
      const where = `${method} ${p} ${JSON.stringify(body)}: ${r.text}`;
      expect(r.status, where).toBe(400);
      expect(r.body, where).toMatchObject({ code: "bad_request", retryable: false });
      expect(r.body.message, where).toMatch(message);
      expect(r.text, where).not.toContain("hushhush");
    }
    // A body that is not JSON at all is not quoted either.
    const res = await asA(`/v1/boxes/${box.id}/cookies`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"cookies": [hushhush' });
    expect(res.status).toBe(400);
    expect(await res.text()).not.toContain("hushhush");
  });

  it("a state is its workspace's: another workspace (or the server token) gets 404 for its names", async () => {
    expect((await json(await asB("/v1/states"))).states).toEqual([]);
    expect((await asB("/v1/states/work", { method: "DELETE" })).status).toBe(404);
    // Another workspace's box does not exist for it either.
    expect((await call(asB, "POST", "/state/load", { name: "work" })).status).toBe(404);
    expect((await call(asB, "GET", "/cookies")).status).toBe(404);
    // The server token reaches the box, but keeps states of its own: "work" is not one.
    const r = await server.api(`/v1/boxes/${box.id}/state/load`, { method: "POST", json: { name: "work" } });
    expect(r.status).toBe(404);
    expect(await json(r)).toMatchObject({ code: "not_found", message: 'no saved state named "work"' });
    expect((await json(await server.api("/v1/states"))).states).toEqual([]);
    // Bob's state of the same name is his own.
    const bobs = await json(await server.api(`/v1/boxes/${box.id}/state/save`, { method: "POST", json: { name: "work" } }));
    expect(bobs).toMatchObject({ name: "work" });
    expect((await json(await server.api("/v1/states"))).states.map((x: any) => x.name)).toEqual(["work"]);
    expect((await json(await asA("/v1/states"))).states.map((x: any) => x.name)).toEqual(["work", "three"]);
  });

  it("a person's exclusive takeover refuses loading and setting or clearing cookies with 409 denied; saving and reading go on", async () => {
    const takeover = `/v1/boxes/${box.id}/screens/0/takeover`;
    expect((await asA(takeover, { method: "POST", json: { shared: false } })).status).toBe(200);
    try {
      for (const [method, p, body] of [
        ["POST", "/state/load", { name: "work" }],
        ["POST", "/cookies", { url: SITE, cookies: [{ name: "k", value: "v" }] }],
        ["DELETE", "/cookies", undefined],
      ] as const) {
        const r = await call(asA, method, p, body);
        expect(r.status, `${method} ${p}: ${r.text}`).toBe(409);
        expect(r.body).toMatchObject({ code: "denied", retryable: true });
      }
      await ok(asA, "POST", "/state/save", {});
      await ok(asA, "GET", "/cookies");
    } finally {
      await asA(takeover, { method: "DELETE" });
    }
    await ok(asA, "POST", "/state/load", { name: "work" });
  });

  it("states are sealed at rest, and no value reaches the server's log", async () => {
    // Written by the page's own script, not through a URL (open_url's URL is in the trace).
    await openAndSee(APP);
    await inFrontTab(`document.cookie = "visit=sealedvalue; path=/"; localStorage.setItem("theme", "dark-sealedvalue"); sessionStorage.setItem("draft", "draft-sealedvalue")`);
    await ok(asA, "POST", "/state/save", { name: "sealed", session_storage: true });
    await ok(asA, "POST", "/cookies", { url: SITE, cookies: [{ name: "k", value: "cookievalue-zz" }] });
    await ok(asA, "POST", "/state/save", { name: "sealed2" });
    // Every file of the store (the database and its write-ahead log), or a dump of PostgreSQL's.
    const files = storeAtRest(server);
    expect(files.map((f) => f.name)).toContain(server.store.kind === "sqlite" ? "holm.db" : "pg_dump");
    for (const { name, bytes } of files) {
      for (const v of ["dark-sealedvalue", "draft-sealedvalue", "visit=sealedvalue", "cookievalue-zz", "sealedvalue"]) {
        expect(bytes.includes(Buffer.from(v)), `${v} in ${name}`).toBe(false);
      }
    }
    const db = openStore(server, { readonly: true });
    try {
      const rows = db.prepare("select owner, name, sealed, size from browser_states where name like 'sealed%'").all() as any[];
      expect(rows).toHaveLength(2);
      for (const r of rows) {
        expect(r.owner).toMatch(/^ws_/);
        expect(r.sealed).toMatch(/^v1\./);
        expect(r.sealed).not.toContain("sealedvalue");
      }
    } finally {
      db.close();
    }
    for (const v of ["sealedvalue", "cookievalue-zz", "hushhush"]) expect(server.logs()).not.toContain(v);
  });
});

