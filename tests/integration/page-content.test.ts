import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { decodePng } from "../support/png";
import { SITE, serveSite } from "../support/site";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// What a page holds and shows (seed 000 "Pages"): tabs, read, evaluate, screenshot, pdf, console
// and dialogs, on a real two-screen box against pages served inside it (tests/fixtures/site:
// content-*.html). Checked from the page (its title, its text, the file it printed into the box),
// not only from the route's answer.

let server: TestServer;
let box: any;

interface Answer {
  status: number;
  body: any;
}

async function call(method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await server.api(`/v1/boxes/${box.id}${path}`, { method, ...(body !== undefined ? { json: body } : {}) });
  return { status: res.status, body: await json(res) };
}

async function ok(method: string, path: string, body?: unknown): Promise<any> {
  const r = await call(method, path, body);
  expect(r.status, `${method} ${path}: ${JSON.stringify(r.body).slice(0, 600)}`).toBe(200);
  return r.body;
}

const actions = (list: unknown[], screen = 0) => ok("POST", `/screens/${screen}/actions`, { actions: list });
const open = (url: string, label?: string, screen = 0) => actions([{ type: "open_url", url, ...(label ? { label } : {}) }], screen);
const evalIn = async (expression: string, tab?: string) =>
  (await ok("POST", `/page/evaluate${tab ? `?tab=${encodeURIComponent(tab)}` : ""}`, { expression })).value;

/** `read()` once `done` holds of it (polled, at most 15 s). */
const until = <T>(read: () => Promise<T>, done: (v: T) => boolean): Promise<T> =>
  vi.waitFor(
    async () => {
      const v = await read();
      if (!done(v)) throw new Error(`not yet: ${JSON.stringify(v).slice(0, 300)}`);
      return v;
    },
    { timeout: 15_000, interval: 100 },
  );

/** The desktop the box runs: X11, or Wayland when page-content.wayland.test.ts imports this suite. */
const DESKTOP = (globalThis as { HOLM_PAGE_CONTENT_DESKTOP?: string }).HOLM_PAGE_CONTENT_DESKTOP ?? "x11";

beforeAll(async () => {
  server = await startServer();
  const desktop = { screens: 2, ...(DESKTOP === "wayland" && { server: "wayland" }) };
  box = await json(await server.api("/v1/boxes", { method: "POST", json: { spec: { desktop } } }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  expect(box.spec.desktop.server).toBe(DESKTOP);
  await serveSite(server, box.id);
  await open(`${SITE}/content-console.html`, "console");
  await open(`${SITE}/content-article.html`, "article");
  await open(`${SITE}/index.html`, "side", 1);
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

describe("tabs (GET /pages, DELETE /pages/{tab}, POST /pages/{tab}/focus)", () => {
  it("GET /pages lists every screen's tabs, each with its screen and label", async () => {
    const { tabs } = await ok("GET", "/pages");
    expect(tabs.find((t: any) => t.label === "article")).toMatchObject({ screen: 0, url: `${SITE}/content-article.html`, active: true });
    expect(tabs.find((t: any) => t.label === "side")).toMatchObject({ screen: 1, url: `${SITE}/index.html`, active: true });
    for (const t of tabs) expect(Object.keys(t).sort()).toEqual(expect.arrayContaining(["active", "id", "screen", "title", "url"]));
  });

  it("focus and close a tab by label, on the screen that has it; the tab list shows it", async () => {
    await open(`${SITE}/index.html`, "docs");
    let tabs = (await ok("GET", "/pages")).tabs;
    expect(tabs.find((t: any) => t.label === "docs")?.active).toBe(true);
    const focused = await ok("POST", "/pages/article/focus");
    expect(focused).toMatchObject({ screen: 0, tab: { label: "article", active: true } });
    tabs = (await ok("GET", "/pages")).tabs;
    expect(tabs.find((t: any) => t.label === "article")?.active).toBe(true);
    expect(tabs.find((t: any) => t.label === "docs")?.active).toBe(false);
    const id = tabs.find((t: any) => t.label === "docs").id;
    const closed = await ok("DELETE", `/pages/${id}`);
    expect(closed).toMatchObject({ screen: 0, closed: true, tab: { id, label: "docs" } });
    expect((await ok("GET", "/pages")).tabs.some((t: any) => t.id === id)).toBe(false);
    // Screen 1's tab, by label, through the box-wide route.
    await open(`${SITE}/index.html`, "side2", 1);
    expect(await ok("DELETE", "/pages/side2")).toMatchObject({ screen: 1, closed: true });
    expect((await ok("GET", "/pages")).tabs.some((t: any) => t.label === "side2")).toBe(false);
  });

  it('an unknown tab is 404 not_found on every route that names one ("No such box, runtime, or object")', async () => {
    const refused = [
      await call("DELETE", "/pages/nope"),
      await call("POST", "/pages/nope/focus"),
      await call("GET", "/page?tab=nope"),
      await call("POST", "/page/evaluate?tab=nope", { expression: "1" }),
      await call("POST", "/page/screenshot", { tab: "nope" }),
      await call("POST", "/page/pdf?tab=nope", {}),
      await call("POST", "/page/console?tab=nope", {}),
    ];
    for (const r of refused) expect([r.status, r.body.code]).toEqual([404, "not_found"]);
  });
});

describe("read (GET /page)", () => {
  it("markdown: Readability keeps the article (headings, links) and drops the nav, sidebar and footer", async () => {
    const r = await ok("GET", "/page?tab=article");
    expect(r).toMatchObject({ url: `${SITE}/content-article.html`, title: "The long article about boxes", format: "markdown", cut: false });
    expect(r.content.startsWith("# The long article about boxes\n")).toBe(true);
    expect(r.content).toMatch(/^## Section 1: the \w+ and the \w+$/m);
    expect(r.content).toMatch(/^### Aside 7$/m);
    expect(r.content).toContain(`](${SITE}/docs/s1-1.html)`);
    expect(r.content).toContain("```\ncurl -fsS");
    for (const chrome of ["NAVMARKER", "SIDEMARKER", "FOOTERMARKER", "Related story"]) expect(r.content).not.toContain(chrome);
    expect(r.content.length).toBeGreaterThan(150_000);
    expect(r.links.length).toBe(100);
    expect(r.links[0]).toEqual({ text: expect.stringMatching(/notes 1\.1$/), url: `${SITE}/docs/s1-1.html` });
  });

  it("a 200 KB article read again unchanged is not converted again (Server-Timing says which)", async () => {
    // Each markdown read says in Server-Timing whether it converted the page or kept the last
    // read's text. The times are printed, not held (`npm run bench pages` holds them): beside the
    // other suites a conversion once took 421 ms here, and a timed check of the cache failed CI.
    // The answer is cut to 1,000 characters: what varies is the conversion, not 200 KB crossing.
    const read = async () => {
      const t0 = performance.now();
      const res = await server.api(`/v1/boxes/${box.id}/page?tab=article&format=markdown&limit=1000`);
      const body = await json(res);
      expect(res.status, JSON.stringify(body).slice(0, 300)).toBe(200);
      expect(body.cut).toBe(true);
      expect(body.content).toMatch(/^# /);
      return { ms: performance.now() - t0, how: /markdown;desc=(\w+)/.exec(res.headers.get("server-timing") ?? "")?.[1] };
    };
    const convertedTimes: number[] = [];
    const keptTimes: number[] = [];
    for (let i = 0; i < 6; i++) {
      // A change to the document makes the next read convert the whole article again.
      await evalIn("document.body.appendChild(document.createComment('x')); 1", "article");
      const c = await read();
      const k = await read();
      const k2 = await read();
      expect([c.how, k.how, k2.how], `round ${i}`).toEqual(["converted", "kept", "kept"]);
      convertedTimes.push(c.ms);
      keptTimes.push(k.ms, k2.ms);
    }
    // The other formats read the page as it is: no markdown to keep, nothing said.
    const text = await server.api(`/v1/boxes/${box.id}/page?tab=article&format=text&limit=10`);
    expect(text.status).toBe(200);
    expect(text.headers.get("server-timing") ?? "").not.toContain("markdown");
    await text.arrayBuffer();
    const fastest = (xs: number[]) => Math.min(...xs).toFixed(1);
    console.log(`read 200 KB article as markdown, first 1,000 characters: ${fastest(convertedTimes)} ms converted after a change, ${fastest(keptTimes)} ms kept (fastest of 6 and 12)`);
  });

  it("markdown follows the page: a change to the document shows in the next read", async () => {
    expect((await ok("GET", "/page?tab=article")).content).not.toContain("Appendix added later");
    await evalIn("const h = document.createElement('h2'); h.textContent = 'Appendix added later'; document.querySelector('article').append(h); 1", "article");
    expect((await ok("GET", "/page?tab=article")).content).toContain("## Appendix added later");
    await evalIn("document.querySelector('article h2:last-of-type').remove(); 1", "article");
    expect((await ok("GET", "/page?tab=article")).content).not.toContain("Appendix added later");
  });

  it("text is the page's innerText (chrome included); raw its HTML", async () => {
    const text = await ok("GET", "/page?tab=article&format=text&max_links=3");
    expect(text.format).toBe("text");
    expect(text.content).toContain("NAVMARKER menu");
    expect(text.content).toContain("FOOTERMARKER");
    expect(text.content).not.toContain("<h2");
    expect(text.links).toEqual([
      { text: "Home", url: `${SITE}/home.html` },
      { text: "Products", url: `${SITE}/products.html` },
      { text: "Pricing", url: `${SITE}/pricing.html` },
    ]);
    const raw = await ok("GET", "/page?tab=article&format=raw&max_links=0");
    expect(raw.content.startsWith("<!DOCTYPE html><html lang=\"en\"><head>")).toBe(true);
    expect(raw.content).toContain('<footer class="site-footer">');
    expect(raw.links).toEqual([]);
  });

  it("`limit` cuts the content and says `cut: true`", async () => {
    for (const format of ["markdown", "text", "raw"]) {
      const r = await ok("GET", `/page?tab=article&format=${format}&limit=500`);
      expect([r.content.length, r.cut], format).toEqual([500, true]);
    }
  });

  it("with no tab, the front tab of screen 0", async () => {
    await ok("POST", "/pages/article/focus");
    expect((await ok("GET", "/page?format=text&limit=50")).url).toBe(`${SITE}/content-article.html`);
  });

  it("a page that is not an article (a form) still reads as markdown", async () => {
    await open(`${SITE}/content-dialogs.html`, "dialogs");
    const r = await ok("GET", "/page?tab=dialogs");
    expect(r.content).toContain("Dialogs");
    expect(r.content).toContain("nothing yet");
  });
});

describe("evaluate (POST /page/evaluate)", () => {
  it('the seed\'s body as written: {"expression": "document.title", "timeout_ms": 5000, "limit": 2000}', async () => {
    const r = await ok("POST", "/page/evaluate?tab=article", { expression: "document.title", timeout_ms: 5000, limit: 2000 });
    expect(r).toEqual({ value: "The long article about boxes", cut: false });
  });

  it("awaits a returned promise, and runs in the page's own context", async () => {
    expect(await evalIn("new Promise((r) => setTimeout(() => r(6 * 7), 50))", "article")).toBe(42);
    await evalIn("window.__mark = 'set by evaluate'; 1", "article");
    expect(await evalIn("window.__mark", "article")).toBe("set by evaluate");
  });

  it("values JSON cannot hold become null or strings", async () => {
    const v = await evalIn("(() => { const c = { n: 1 }; c.self = c; return { u: undefined, f: () => 1, big: 10n, nan: NaN, d: new Date(0), node: document.body, c, list: [1, undefined] }; })()", "article");
    expect(v).toEqual({ big: "10", nan: null, d: "1970-01-01T00:00:00.000Z", node: "ref: <Node>", c: { n: 1, self: "[Circular]" }, list: [1, null] });
    expect(await evalIn("undefined", "article")).toBeNull();
  });

  it('a thrown exception is 422 failed with its message ("The action ran and did not succeed")', async () => {
    for (const expression of ["(() => { throw new Error('bad thing'); })()", "Promise.reject(new Error('bad thing'))"]) {
      const r = await call("POST", "/page/evaluate?tab=article", { expression });
      expect([r.status, r.body.code, r.body.message]).toEqual([422, "failed", "the expression threw: Error: bad thing"]);
    }
  });

  it("`timeout_ms` exceeded is 504 timeout; a script stuck in a loop is stopped, and the page answers after", async () => {
    let t0 = performance.now();
    let r = await call("POST", "/page/evaluate?tab=article", { expression: "new Promise(() => {})", timeout_ms: 300 });
    expect([r.status, r.body.code]).toEqual([504, "timeout"]);
    expect(performance.now() - t0).toBeLessThan(3000);
    t0 = performance.now();
    r = await call("POST", "/page/evaluate?tab=article", { expression: "(() => { for (;;) {} })()", timeout_ms: 500 });
    expect([r.status, r.body.code]).toEqual([504, "timeout"]);
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(await evalIn("1 + 1", "article")).toBe(2);
    expect((await ok("GET", "/page?tab=article&format=text&limit=20")).content.length).toBe(20);
  });

  it("`limit` caps the value's JSON and says `cut: true`", async () => {
    expect(await ok("POST", "/page/evaluate?tab=article", { expression: "'x'.repeat(5000)", limit: 100 })).toEqual({ value: "x".repeat(100), cut: true });
    const r = await ok("POST", "/page/evaluate?tab=article", { expression: "Array.from({ length: 100 }, (_, i) => i)", limit: 10 });
    expect(r).toEqual({ value: "[0,1,2,3,4", cut: true });
  });
});

describe("screenshot (POST /page/screenshot)", () => {
  it('the seed\'s body as written: {"full": false, "format": "png", "quality": 70, "annotate": false, "tab": null}', async () => {
    await ok("POST", "/pages/article/focus");
    const r = await ok("POST", "/page/screenshot", { full: false, format: "png", quality: 70, annotate: false, tab: null });
    expect(r.format).toBe("png");
    const png = decodePng(Buffer.from(r.png_base64, "base64"));
    expect([png.width, png.height]).toEqual([r.width, r.height]);
    const viewport = await evalIn("[innerWidth * devicePixelRatio, innerHeight * devicePixelRatio]", "article");
    expect([r.width, r.height]).toEqual(viewport);
  });

  it("jpeg and webp, and the full page", async () => {
    const jpeg = await ok("POST", "/page/screenshot", { format: "jpeg", quality: 40, tab: "article" });
    expect(Buffer.from(jpeg.jpeg_base64, "base64").subarray(0, 2).toString("hex")).toBe("ffd8");
    const webp = await ok("POST", "/page/screenshot", { format: "webp", tab: "article" });
    const w = Buffer.from(webp.webp_base64, "base64");
    expect([w.toString("ascii", 0, 4), w.toString("ascii", 8, 12)]).toEqual(["RIFF", "WEBP"]);
    expect([webp.width, webp.height]).toEqual([jpeg.width, jpeg.height]);
    // Chromium paints only the tab it shows: another is refused, not waited for.
    const hidden = await call("POST", "/page/screenshot", { tab: "console" });
    expect([hidden.status, hidden.body.code]).toEqual([422, "failed"]);
    // The full page: the console page, made three screens tall.
    await ok("POST", "/pages/console/focus");
    const docHeight = await evalIn("document.body.style.height = (3 * innerHeight) + 'px'; document.documentElement.scrollHeight * devicePixelRatio", "console");
    const full = await ok("POST", "/page/screenshot", { full: true, tab: "console" });
    expect(full.height).toBe(docHeight);
    expect(full.height).toBeGreaterThan(jpeg.height * 2);
    expect(decodePng(Buffer.from(full.png_base64, "base64")).height).toBe(full.height);
  });

  it("`annotate` outlines each control with its ref, on the image only (the page is not changed)", async () => {
    await ok("POST", "/pages/dialogs/focus");
    const before = await evalIn("document.documentElement.outerHTML", "dialogs");
    const plain = await ok("POST", "/page/screenshot", { tab: "dialogs" });
    const r = await ok("POST", "/page/screenshot", { annotate: true, tab: "dialogs" });
    expect(await evalIn("document.documentElement.outerHTML", "dialogs")).toBe(before);
    const names = r.labels.map((l: any) => `${l.role} ${l.name}`);
    expect(names).toEqual(expect.arrayContaining(["button Alert", "button Confirm", "button Prompt", "textbox Note"]));
    for (const l of r.labels) expect(l.ref).toMatch(/^e\d+$/);
    const a = decodePng(Buffer.from(plain.png_base64, "base64"));
    const b = decodePng(Buffer.from(r.png_base64, "base64"));
    const alert = r.labels.find((l: any) => l.name === "Alert");
    // The outline's left edge, halfway down the button (labels are in the image's pixels): drawn
    // in the label colour.
    const [x, y] = [alert.x, Math.round(alert.y + alert.height / 2)];
    const [red, green, blue] = b.rgb(x, y);
    expect(red).toBeGreaterThan(180);
    expect(green).toBeLessThan(80);
    expect(blue).toBeGreaterThan(50);
    expect(a.rgb(x, y)).not.toEqual(b.rgb(x, y));
  });
});

describe("pdf (POST /page/pdf)", () => {
  it('the seed\'s body as written: {"landscape": false, "no_background": false, "path": "/tmp/page.pdf"} writes the PDF into the box', async () => {
    const r = await ok("POST", "/page/pdf?tab=article", { landscape: false, no_background: false, path: "/tmp/page.pdf" });
    expect(r).toMatchObject({ path: "/tmp/page.pdf" });
    expect(r.bytes).toBeGreaterThan(10_000);
    const file = await ok("GET", "/files?path=/tmp/page.pdf");
    const pdf = Buffer.from(file.contents_base64, "base64");
    expect([pdf.length, pdf.subarray(0, 5).toString("latin1")]).toEqual([r.bytes, "%PDF-"]);
    const trace = await json(await server.api(`/v1/boxes/${box.id}/trace?limit=500`));
    expect(trace.entries.some((e: any) => e.event === "file_written" && e.data?.path === "/tmp/page.pdf")).toBe(true);
  });

  it("without a path the PDF comes back in the answer; landscape pages are wider than tall", async () => {
    const r = await ok("POST", "/page/pdf?tab=dialogs", { landscape: true });
    const pdf = Buffer.from(r.pdf_base64, "base64");
    expect([pdf.length, pdf.subarray(0, 5).toString("latin1")]).toEqual([r.bytes, "%PDF-"]);
    const box = /\/MediaBox \[0 0 ([\d.]+) ([\d.]+)\]/.exec(pdf.toString("latin1"));
    expect(box && Number(box[1]) > Number(box[2])).toBe(true);
  });
});

describe("console (POST /page/console)", () => {
  it("the page's messages and uncaught exceptions; errors only; limit; clear", async () => {
    // The server hears a tab's console from when it attached to its browser: load it again.
    await ok("POST", "/page/evaluate?tab=console", { expression: "setTimeout(() => location.reload(), 0); 1" });
    const all = await until(
      () => ok("POST", "/page/console?tab=console", { errors: false, clear: false, limit: 200 }),
      (r) => r.messages.some((m: any) => m.text === "Uncaught thrown after load"),
    );
    const texts = all.messages.map((m: any) => [m.type, m.text]);
    expect(texts).toEqual(
      expect.arrayContaining([
        ["log", "hello from the page 42"],
        ["warning", "careful now"],
        ["error", "bad news: the widget failed"],
        ["error", "Uncaught thrown after load"],
      ]),
    );
    const errors = await ok("POST", "/page/console?tab=console", { errors: true });
    expect(errors.messages.every((m: any) => m.type === "error")).toBe(true);
    expect(errors.messages.map((m: any) => m.text)).toEqual(expect.arrayContaining(["bad news: the widget failed", "Uncaught thrown after load"]));
    await ok("POST", "/page/evaluate?tab=console", { expression: "document.getElementById('log').click(); 1" });
    const last = await until(() => ok("POST", "/page/console?tab=console", { limit: 1 }), (r) => r.messages[0]?.text === "clicked 1");
    expect([last.messages.length, last.cut]).toEqual([1, true]);
    await ok("POST", "/page/console?tab=console", { clear: true });
    expect((await ok("POST", "/page/console?tab=console", {})).messages).toEqual([]);
  });
});

describe("dialogs (the `dialog` step)", () => {
  const click = (id: string) => ({ type: "evaluate", what: { expression: `setTimeout(() => document.getElementById('${id}').click(), 100); 1` } });
  const out = () => evalIn("document.getElementById('out').textContent", "dialogs");
  beforeEach(async () => {
    await ok("POST", "/pages/dialogs/focus");
    await evalIn("document.getElementById('out').textContent = 'nothing yet'", "dialogs");
  });

  it("an alert from a click does not wedge the page: it is dismissed by itself, and the page goes on", async () => {
    await actions([click("alert")]);
    const t0 = performance.now();
    // The page's script stops at the alert and goes on once it is gone (dismissed after about
    // four seconds: DIALOG_AUTO_DISMISS_MS); this waits in the page for what comes after it.
    const r = await ok("POST", "/page/evaluate?tab=dialogs", {
      expression: "new Promise((done) => { const check = () => (out.textContent === 'alert: done' ? done(out.textContent) : setTimeout(check, 50)); check(); })",
      timeout_ms: 15_000,
    });
    expect(r.value).toBe("alert: done");
    expect(performance.now() - t0).toBeGreaterThan(2000);
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(await evalIn("1 + 1", "dialogs")).toBe(2);
  });

  it("accept and dismiss of a confirm reach the page", async () => {
    let r = await actions([click("confirm"), { type: "dialog", accept: true }]);
    expect(r.results[1]).toMatchObject({ ok: true, dialog: { type: "confirm", message: "Deploy?" }, accepted: true });
    expect(await out()).toBe("confirm: true");
    r = await actions([click("confirm"), { type: "dialog", accept: false }]);
    expect(r.results[1]).toMatchObject({ ok: true, accepted: false });
    expect(await out()).toBe("confirm: false");
  });

  it("a prompt answered with text, and dismissed", async () => {
    let r = await actions([click("prompt"), { type: "dialog", accept: true, text: "Ada" }]);
    expect(r.results[1]).toMatchObject({ ok: true, dialog: { type: "prompt", message: "Name?", default_value: "nobody" }, accepted: true, text: "Ada" });
    expect(await out()).toBe("prompt: Ada");
    r = await actions([click("prompt"), { type: "dialog" }]);
    expect(r.results[1]).toMatchObject({ ok: true, accepted: false });
    expect(await out()).toBe("prompt: null");
  });

  it("no dialog open is not_found (004: returns 404 if none does)", async () => {
    const res = await server.api(`/v1/boxes/${box.id}/screens/0/actions`, { method: "POST", json: { actions: [{ type: "dialog", accept: true }] } });
    const r = await json(res);
    expect([r.stopped_at, r.results[0].ok, r.results[0].code]).toEqual([0, false, "not_found"]);
  });
});

describe("bad requests are 400 with the seed's codes", () => {
  it("bodies and queries that do not fit", async () => {
    const cases: [string, string, unknown?][] = [
      ["GET", "/page?format=html"],
      ["GET", "/page?limit=abc"],
      ["GET", "/page?limit=0"],
      ["GET", "/page?max_links=-1"],
      ["GET", "/page?colour=red"],
      ["POST", "/page/evaluate", {}],
      ["POST", "/page/evaluate", { expression: "" }],
      ["POST", "/page/evaluate", { expression: "1", timeout_ms: 30_001 }],
      ["POST", "/page/evaluate", { expression: "1", world: "main" }],
      ["POST", "/page/evaluate?frame=1", { expression: "1" }],
      ["POST", "/page/screenshot", { format: "gif" }],
      ["POST", "/page/screenshot", { quality: 101 }],
      ["POST", "/page/screenshot", { full: "yes" }],
      ["POST", "/page/pdf", { landscape: "yes" }],
      ["POST", "/page/pdf", { path: "" }],
      ["POST", "/page/pdf", { scale: 2 }],
      ["POST", "/page/console", { limit: 0 }],
      ["POST", "/page/console", { errors: 1 }],
    ];
    for (const [method, path, body] of cases) {
      const r = await call(method, path, body);
      expect([r.status, r.body.code], `${method} ${path} ${JSON.stringify(body)}: ${r.body.message}`).toEqual([400, "bad_request"]);
    }
    const notJson = await server.api(`/v1/boxes/${box.id}/page/evaluate`, { method: "POST", body: "{", headers: { "content-type": "application/json" } });
    expect([notJson.status, (await json(notJson)).code]).toEqual([400, "bad_request"]);
  });

  it("an unknown box is 404 before anything else", async () => {
    const res = await server.api("/v1/boxes/nosuchbox/page/evaluate", { method: "POST", json: { nope: 1 } });
    expect([res.status, (await json(res)).code]).toEqual([404, "not_found"]);
  });
});

describe("a person's exclusive takeover", () => {
  it('refuses what acts on the page with 409 denied ("Usually a person has control of the screen"); reads go on', async () => {
    await ok("POST", "/pages/article/focus");
    await ok("POST", "/page/evaluate?tab=article", { expression: "document.title = 'The long article about boxes'" });
    expect((await server.api(`/v1/boxes/${box.id}/screens/0/takeover`, { method: "POST", json: { shared: false } })).status).toBe(200);
    try {
      const refused = [
        await call("POST", "/page/evaluate?tab=article", { expression: "document.title = 'hijacked'" }),
        await call("POST", "/pages/dialogs/focus"),
        await call("DELETE", "/pages/dialogs"),
        await call("POST", "/page/pdf?tab=side", { path: "/tmp/held.pdf" }),
      ];
      for (const r of refused) expect([r.status, r.body.code]).toEqual([409, "denied"]);
      // Screen 1 is not held: acting there goes on.
      expect(await evalIn("document.title", "side")).toBe("Fixture site");
      await ok("GET", "/pages");
      await ok("GET", "/page?tab=article&format=text&limit=10");
      await ok("POST", "/page/screenshot", { tab: "article" });
      await ok("POST", "/page/console?tab=article", {});
      await ok("POST", "/page/pdf?tab=article", {});
    } finally {
      await server.api(`/v1/boxes/${box.id}/screens/0/takeover`, { method: "DELETE" });
    }
    expect(await evalIn("document.title", "article")).toBe("The long article about boxes");
    expect((await ok("GET", "/pages")).tabs.some((t: any) => t.label === "dialogs")).toBe(true);
  });
});
