// Tabs of a real Chromium through the agent: open_url (blank and current), tabs, on_tab (focus,
// close), labels, and the `tabs` of every batch. Every effect is read back from Chromium itself:
// its own /json/list, and each page's `location`, `readyState` and `visibilityState` over CDP.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { batch, chromePagesAt, cleanup, display, evalInPage, freePort, median, startAgent, startChromium, startFluxbox, startXvfb, until, type Agent } from "./harness";

const D = display(158);
let agent: Agent;
let cdpPort: number;
let site: http.Server;
let siteUrl: string;
const timings: Record<string, number[]> = {};
const time = (k: string, ms: number): void => void (timings[k] ??= []).push(ms);

interface Tab {
  id: string;
  label?: string;
  url: string;
  title: string;
  active: boolean;
}

/** Chromium's own list of pages. */
const chromePages = () => chromePagesAt(cdpPort);
const evalIn = <T>(id: string, expression: string) => evalInPage<T>(cdpPort, id, expression);

/** The page Chromium shows: the one whose document is visible (checked in every page). */
async function visiblePage(): Promise<string> {
  const pages = await chromePages();
  const vis = await Promise.all(pages.map(async (p) => ((await evalIn<string>(p.id, "document.visibilityState")) === "visible" ? p.id : null)));
  const shown = vis.filter((v): v is string => v !== null);
  expect(shown).toHaveLength(1);
  return shown[0];
}

async function tabsRoute(): Promise<Tab[]> {
  const t = performance.now();
  const r = await agent.call("GET", "/screens/0/tabs");
  time("GET /tabs", performance.now() - t);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.tabs;
}

/** The agent's list must be Chromium's, in its order, with the visible page the only active one. */
async function expectTabsMatchChromium(tabs: Tab[]): Promise<void> {
  const pages = await chromePages();
  expect(tabs.map((t) => [t.id, t.url, t.title])).toEqual(pages.map((p) => [p.id, p.url, p.title]));
  const front = await visiblePage();
  expect(tabs.filter((t) => t.active).map((t) => t.id)).toEqual([front]);
}

const dataUrl = (title: string, body = ""): string => `data:text/html,<title>${title}</title><p>${body || title}</p>`;

async function openUrl(step: Record<string, unknown>, timing?: string): Promise<any> {
  const r = await batch(agent, 0, { actions: [{ type: "open_url", ...step }] });
  expect(r.results[0].ok, JSON.stringify(r.results[0])).toBe(true);
  if (timing) time(timing, r.took_ms);
  return r;
}

beforeAll(async () => {
  // A page that arrives slowly: headers after 300 ms, the end of the body 700 ms later; and one that never ends.
  site = http.createServer((req, res) => {
    if (req.url === "/slow") {
      setTimeout(() => {
        res.writeHead(200, { "content-type": "text/html" });
        res.write(`<!doctype html><title>Slow</title><p>start</p>${" ".repeat(2048)}`);
        setTimeout(() => res.end("<p id=end>end</p>"), 700);
      }, 300);
    } else if (req.url === "/never") {
      res.writeHead(200, { "content-type": "text/html" });
      res.write(`<!doctype html><title>Never</title>${" ".repeat(2048)}`);
    } else {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(`<!doctype html><title>Site ${req.url}</title><p>${req.url}</p>`);
    }
  });
  await new Promise<void>((r) => site.listen(0, "127.0.0.1", r));
  siteUrl = `http://127.0.0.1:${(site.address() as { port: number }).port}`;

  await startXvfb(D);
  await startFluxbox(D);
  ({ cdpPort } = await startChromium(D));
  await until(async () => (await chromePages()).length === 1, "chromium's first page", 30_000, 200);
  agent = await startAgent({ HOLM_DISPLAY_BASE: String(D), HOLM_CDP_PORT_BASE: String(cdpPort) });
});
afterAll(async () => {
  site?.close();
  await cleanup();
  const line = (k: string) => `${k}: median ${median(timings[k]).toFixed(1)} ms, max ${Math.max(...timings[k]).toFixed(1)} ms (n=${timings[k].length})`;
  console.log(`pages timings\n  ${Object.keys(timings).sort().map(line).join("\n  ")}`);
});

describe("pages", () => {
  let first: string; // the tab Chromium started with
  let one: string; // opened with label "one"

  it("lists the one tab Chromium started with, active", async () => {
    const tabs = await tabsRoute();
    expect(tabs).toHaveLength(1);
    expect(tabs[0]).toEqual({ id: expect.any(String), url: "about:blank", title: "about:blank", active: true });
    first = tabs[0].id;
    await expectTabsMatchChromium(tabs);
  });

  it("open_url (blank) opens a second tab on the URL, in front, loaded, with its label", async () => {
    const url = dataUrl("One", "first%20page");
    const r = await openUrl({ url, label: "one" });
    one = r.results[0].tab.id;
    expect(r.results[0].tab).toEqual({ id: one, label: "one", url, title: "One" });
    expect(["interactive", "complete"]).toContain(r.results[0].ready_state);
    // Chromium's side: two pages, the new one on the data: URL, loaded, and the one it shows.
    const pages = await chromePages();
    expect(pages.map((p) => p.id).sort()).toEqual([first, one].sort());
    expect(pages.find((p) => p.id === one)!.url).toBe(url);
    expect(await evalIn(one, "location.href")).toBe(url);
    expect(await evalIn(one, "document.readyState")).not.toBe("loading");
    expect(await evalIn(one, "document.body.textContent")).toBe("first page");
    expect(await visiblePage()).toBe(one);
    // The batch's own `tabs`: both, the new one active and labelled.
    expect(r.tabs).toHaveLength(2);
    expect(r.tabs.find((t: Tab) => t.id === one)).toEqual({ id: one, label: "one", url, title: "One", active: true });
    expect(r.tabs.find((t: Tab) => t.id === first)).toMatchObject({ active: false });
    await expectTabsMatchChromium(r.tabs);
  });

  it("open_url (current) navigates the front tab in place", async () => {
    const url = dataUrl("Two");
    const r = await openUrl({ url, target: "current" });
    expect(r.results[0].tab).toEqual({ id: one, label: "one", url, title: "Two" });
    const pages = await chromePages();
    expect(pages).toHaveLength(2);
    expect(await evalIn(one, "location.href")).toBe(url);
    expect(await evalIn(one, "history.length")).toBe(2); // a navigation, not a new tab
    expect(await evalIn(first, "location.href")).toBe("about:blank");
    // A same-document navigation (a #fragment) answers too.
    const frag = await openUrl({ url: `${url}#part`, target: "current" });
    expect(frag.results[0].tab.id).toBe(one);
    expect(await evalIn(one, "location.hash")).toBe("#part");
  });

  it("tabs (step and route) lists both, the front one active", async () => {
    const r = await batch(agent, 0, { actions: [{ type: "tabs" }] });
    expect(r.results[0].tabs).toEqual(r.tabs);
    expect(r.tabs.map((t: Tab) => [t.id, t.active])).toEqual([[one, true], [first, false]]);
    await expectTabsMatchChromium(r.results[0].tabs);
    await expectTabsMatchChromium(await tabsRoute());
  });

  it("on_tab focuses by id (route) and by label (step); Chromium shows that tab", async () => {
    const f = await agent.call("POST", `/screens/0/tabs/${first}/focus`);
    expect(f.status, JSON.stringify(f.body)).toBe(200);
    expect(f.body.tab).toEqual({ id: first, url: "about:blank", title: "about:blank", active: true });
    expect(await visiblePage()).toBe(first);
    await expectTabsMatchChromium(await tabsRoute());

    const r = await batch(agent, 0, { actions: [{ type: "on_tab", tab: "one" }] });
    expect(r.results[0]).toMatchObject({ ok: true, tab: { id: one, label: "one", active: true } });
    expect(await visiblePage()).toBe(one);
    expect(r.tabs.map((t: Tab) => [t.id, t.active])).toEqual([[one, true], [first, false]]);
  });

  it("`active` follows a tab switched in Chromium's own UI (Ctrl+Tab through the agent's keyboard)", async () => {
    expect(await visiblePage()).toBe(one);
    const r = await batch(agent, 0, { actions: [{ type: "press", chord: "ctrl+Tab" }, { type: "wait", ms: 150 }] });
    expect(r.stopped_at).toBeNull();
    expect(await visiblePage()).toBe(first);
    expect(r.tabs.map((t: Tab) => [t.id, t.active])).toEqual([[first, true], [one, false]]);
    await agent.call("POST", "/screens/0/tabs/one/focus");
    expect(await visiblePage()).toBe(one);
  });

  it("current follows the front tab; a label moves with a new open_url", async () => {
    await agent.call("POST", `/screens/0/tabs/${first}/focus`);
    const r = await openUrl({ url: `${siteUrl}/a`, target: "current", label: "home" });
    expect(r.results[0].tab).toEqual({ id: first, label: "home", url: `${siteUrl}/a`, title: "Site /a" });
    expect(await evalIn(first, "location.href")).toBe(`${siteUrl}/a`);
    expect(await evalIn(one, "location.href")).toBe(`${dataUrl("Two")}#part`);
    // The label "home" now names `first`: on_tab by it, and the route answers the same.
    const f = await agent.call("POST", "/screens/0/tabs/home/focus");
    expect(f.body.tab).toMatchObject({ id: first, label: "home" });
    const tabs = await tabsRoute();
    expect(tabs.find((t) => t.id === first)!.label).toBe("home");
    expect(tabs.find((t) => t.id === one)!.label).toBe("one");
  });

  it("waits for a slow page to be interactive before answering, on both targets", async () => {
    const r = await openUrl({ url: `${siteUrl}/slow`, label: "slow" });
    const id = r.results[0].tab.id;
    // Checked at once, from Chromium: the page is past `loading`, so its end has arrived.
    expect(await evalIn(id, "document.readyState")).not.toBe("loading");
    expect(await evalIn(id, "!!document.getElementById('end')")).toBe(true);
    expect(r.results[0].tab).toMatchObject({ url: `${siteUrl}/slow`, title: "Slow" });
    expect(r.took_ms).toBeGreaterThanOrEqual(950);

    await evalIn(id, "document.title = 'changed'");
    const c = await batch(agent, 0, { actions: [{ type: "open_url", url: `${siteUrl}/slow`, target: "current" }] });
    expect(c.results[0].tab.id).toBe(id);
    expect(await evalIn(id, "document.readyState + document.title")).toMatch(/^(interactive|complete)Slow$/);
    expect(await evalIn(id, "!!document.getElementById('end')")).toBe(true);
    expect(c.took_ms).toBeGreaterThanOrEqual(950);
    const close = await agent.call("DELETE", "/screens/0/tabs/slow");
    expect(close.body).toMatchObject({ closed: true });
  });

  it("gives up waiting after 15 s on a page that never finishes, and still answers", async () => {
    const r = await batch(agent, 0, { actions: [{ type: "open_url", url: `${siteUrl}/never` }] });
    expect(r.results[0]).toMatchObject({ ok: true, ready_state: "loading", tab: { url: `${siteUrl}/never`, title: "Never" } });
    expect(r.took_ms).toBeGreaterThanOrEqual(14_900);
    expect(r.took_ms).toBeLessThan(17_000);
    const id = r.results[0].tab.id;
    expect(await evalIn(id, "document.readyState")).toBe("loading");
    expect((await agent.call("DELETE", `/screens/0/tabs/${id}`)).body.closed).toBe(true);
  }, 30_000);

  it("a URL that does not load is `failed`, and the tab shows Chromium's error page", async () => {
    const dead = `http://127.0.0.1:${await freePort()}/`;
    const r = await batch(agent, 0, { actions: [{ type: "open_url", url: dead, label: "dead" }, { type: "tabs" }] });
    expect(r.results[0]).toMatchObject({ ok: false, code: "failed" });
    expect(r.stopped_at).toBe(0);
    const tab = r.tabs.find((t: Tab) => t.label === "dead");
    expect(tab).toMatchObject({ url: dead, active: true });
    const c = await batch(agent, 0, { actions: [{ type: "open_url", url: dead, target: "current" }] });
    expect(c.results[0]).toMatchObject({ ok: false, code: "failed" });
    expect(c.results[0].message).toMatch(/ERR_CONNECTION_REFUSED/);
    const gone = await agent.call("DELETE", "/screens/0/tabs/dead");
    expect(gone.body.closed, JSON.stringify(gone.body)).toBe(true);
  });

  it("closes a tab by label; Chromium no longer has it, and the label is gone", async () => {
    const before = await chromePages();
    const r = await agent.call("DELETE", "/screens/0/tabs/one");
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ closed: true, tab: { id: one, label: "one" } });
    const after = await chromePages();
    expect(after.map((p) => p.id)).toEqual(before.map((p) => p.id).filter((id) => id !== one));
    const again = await agent.call("DELETE", "/screens/0/tabs/one");
    expect(again.status).toBe(404);
    expect(again.body.code).toBe("not_found");
    const b = await batch(agent, 0, { actions: [{ type: "on_tab", tab: "one" }, { type: "on_tab", tab: one, close: true }], keep_going: true });
    expect(b.results.map((x: { code: string }) => x.code)).toEqual(["not_found", "not_found"]);
    expect((await agent.call("POST", "/screens/0/tabs/nope/focus")).status).toBe(404);
    await expectTabsMatchChromium(b.tabs);
  });

  it("a batch step closes a tab too", async () => {
    const o = await openUrl({ url: dataUrl("Three"), label: "three" });
    const id = o.results[0].tab.id;
    const r = await batch(agent, 0, { actions: [{ type: "on_tab", tab: "three", close: true }] });
    expect(r.results[0]).toMatchObject({ ok: true, closed: true, tab: { id, label: "three", active: true } });
    expect((await chromePages()).some((p) => p.id === id)).toBe(false);
    expect(r.tabs.some((t: Tab) => t.id === id)).toBe(false);
  });

  it("refuses other schemes (and non-URLs) before anything runs", async () => {
    const before = (await chromePages()).map((p) => [p.id, p.url]);
    for (const url of ["javascript:alert(1)", "chrome://version", "view-source:http://example.com/", "ftp://example.com/", "not a url", "/relative", ""]) {
      const r = await agent.call("POST", "/screens/0/batch", { actions: [{ type: "tabs" }, { type: "open_url", url }] });
      expect(r.status, url).toBe(400);
      expect(r.body.code).toBe("bad_request");
    }
    const t = await agent.call("POST", "/screens/0/batch", { actions: [{ type: "open_url", url: "about:blank", target: "other" }] });
    expect(t.status).toBe(400);
    expect((await chromePages()).map((p) => [p.id, p.url])).toEqual(before);
  });

  it("opens about:, file: and a 200 kB data: URL; long URLs are cut in the listing", async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "holm-pages-file-")), "page.html");
    fs.writeFileSync(file, "<title>File</title>file");
    const f = await openUrl({ url: `file://${file}`, label: "file" });
    expect(await evalIn(f.results[0].tab.id, "document.title")).toBe("File");
    const big = dataUrl("Big", "x".repeat(200_000));
    const b = await openUrl({ url: big, target: "current" }); // a 200 kB CDP frame from the agent
    expect(b.results[0].tab.id).toBe(f.results[0].tab.id);
    expect(await evalIn(f.results[0].tab.id, "document.body.textContent.length")).toBe(200_000);
    expect(b.results[0].tab.url).toBe(`${big.slice(0, 4096)}…`);
    const a = await openUrl({ url: "about:blank", target: "current" });
    expect(a.results[0].tab).toMatchObject({ id: f.results[0].tab.id, url: "about:blank" });
    expect((await agent.call("DELETE", "/screens/0/tabs/file")).body.closed).toBe(true);
  });

  it("opens and lists tabs over and over (timings printed; targets are in npm run bench)", async () => {
    for (let i = 0; i < 10; i++) {
      await openUrl({ url: dataUrl(`Fast ${i}`), label: "fast" }, "open_url blank (batch took_ms)");
      await openUrl({ url: dataUrl(`Fast current ${i}`), target: "current" }, "open_url current (batch took_ms)");
      await tabsRoute();
      time("empty batch, windows + tabs (took_ms)", (await batch(agent, 0, { actions: [] })).took_ms);
      await agent.call("DELETE", "/screens/0/tabs/fast");
    }
    await expectTabsMatchChromium(await tabsRoute());
  });

  it("a tab's title is the page's own, not DevTools' HTML-escaped form of it (/json/list sends `&#39;` for `'`)", async () => {
    // The title element's text is `Ada's "R&D" <page>`: its markup needs escapes, the title none.
    const r = await openUrl({ url: "data:text/html,<title>Ada's \"R%26amp;D\" %26lt;page%26gt;</title><p>x</p>", label: "title" });
    const id = r.results[0].tab.id;
    const title = await evalIn<string>(id, "document.title");
    expect(title).toBe(`Ada's "R&D" <page>`);
    expect(r.results[0].tab.title).toBe(title);
    expect((await tabsRoute()).find((t) => t.id === id)!.title).toBe(title);
    expect((await agent.call("DELETE", "/screens/0/tabs/title")).body.closed).toBe(true);
  });

  it("a screen whose Chromium does not listen (quit, not started again yet): batches get tabs: [], the tabs route and open_url say screen_unavailable", async () => {
    const lone = await startAgent({ HOLM_DISPLAY_BASE: String(D), HOLM_CDP_PORT_BASE: String(await freePort()) });
    const r = await batch(lone, 0, { actions: [{ type: "cursor" }] });
    expect(r.stopped_at).toBeNull();
    expect(r.tabs).toEqual([]);
    expect(r.windows.length).toBeGreaterThan(0);
    const t = await lone.call("GET", "/screens/0/tabs");
    expect(t.status).toBe(409);
    expect(t.body.code).toBe("screen_unavailable");
    const o = await batch(lone, 0, { actions: [{ type: "open_url", url: "about:blank" }] });
    expect(o.results[0]).toMatchObject({ ok: false, code: "screen_unavailable" });
    lone.proc.kill("SIGKILL");
  });
});
