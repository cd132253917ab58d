// Steps about pages beyond open_url/tabs/on_tab: `capture` of a tab through DevTools, and the
// step types the agent does not run (page steps run in the server, docs/decisions/0010; native
// widgets are not built), which answer `unsupported` where they stand in a batch sent to it. Effects are
// read back from Chromium itself (its /json/list and each page over its own CDP socket).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { batch, chromePagesAt, cleanup, decodePng, display, evalInPage, startAgent, startChromium, startFluxbox, startXvfb, type Agent } from "./harness";

const D = display(161);
let agent: Agent;
let cdpPort: number;

const chromePages = () => chromePagesAt(cdpPort);
const evalIn = <T>(id: string, expression: string) => evalInPage<T>(cdpPort, id, expression);

/** A page filled with one colour, with a title. */
const colourPage = (title: string, colour: string): string =>
  `data:text/html,<title>${title}</title><style>html,body{margin:0;height:100%;background:${colour}}</style>`;

beforeAll(async () => {
  await startXvfb(D);
  await startFluxbox(D);
  ({ cdpPort } = await startChromium(D));
  agent = await startAgent({ HOLM_DISPLAY_BASE: String(D), HOLM_CDP_PORT_BASE: String(cdpPort) });
});
afterAll(cleanup);

describe("capture with tab", () => {
  let red: string;
  let blue: string;

  // 000: `capture` | `what: {window, region, scale, pointer, tab}`; the agent used to drop `tab`
  // and capture the screen (issue 11, item 10).
  it("captures the named tab's page through DevTools, by label or id", async () => {
    const r = await batch(agent, 0, {
      actions: [
        { type: "open_url", url: colourPage("Red", "rgb(255,0,0)"), label: "red" },
        { type: "open_url", url: colourPage("Blue", "rgb(0,0,255)"), label: "blue" },
      ],
    });
    [red, blue] = r.results.map((x: { tab: { id: string } }) => x.tab.id);
    expect((await chromePages())[0].id).toBe(blue);
    const shot = await batch(agent, 0, { actions: [{ type: "capture", what: { tab: "blue" } }, { type: "capture", what: { tab: blue } }, { type: "capture" }] });
    expect(shot.stopped_at).toBeNull();
    const [byLabel, byId, screen] = shot.results;
    expect(byLabel).toMatchObject({ ok: true, tab: blue, unchanged: false });
    const img = decodePng(Buffer.from(byLabel.png_base64, "base64"));
    expect([img.width, img.height]).toEqual([byLabel.width, byLabel.height]);
    // The page's viewport, not the screen (which has the browser's own bar above it).
    expect([img.width, img.height]).toEqual(await evalIn<number[]>(blue, "[innerWidth, innerHeight]"));
    expect([screen.width, screen.height]).toEqual([1280, 800]);
    expect(img.height).toBeLessThan(800);
    for (const [x, y] of [[0, 0], [img.width >> 1, img.height >> 1], [img.width - 1, img.height - 1]]) expect(img.rgb(x, y)).toEqual([0, 0, 255]);
    expect(byId).toMatchObject({ ok: true, tab: blue, hash: byLabel.hash });
  });

  it("refuses a tab Chromium does not show (failed) without bringing it forward, and captures it once shown", async () => {
    const hidden = await batch(agent, 0, { actions: [{ type: "capture", what: { tab: "red" } }] });
    expect(hidden.results[0]).toMatchObject({ ok: false, code: "failed" });
    expect(hidden.results[0].message).toMatch(/not shown.*on_tab/);
    expect(hidden.stopped_at).toBe(0);
    expect((await chromePages())[0].id).toBe(blue);
    expect(await evalIn(red, "document.visibilityState")).toBe("hidden");
    const r = await batch(agent, 0, { actions: [{ type: "on_tab", tab: "red" }, { type: "capture", what: { tab: "red" } }] });
    expect(r.results[1]).toMatchObject({ ok: true, tab: red });
    const img = decodePng(Buffer.from(r.results[1].png_base64, "base64"));
    expect(img.rgb(img.width >> 1, img.height >> 1)).toEqual([255, 0, 0]);
  });

  it("applies region and scale to the tab's page", async () => {
    const r = await batch(agent, 0, {
      actions: [
        { type: "capture", what: { tab: "red", region: { x: 10, y: 20, width: 120, height: 60 } } },
        { type: "capture", what: { tab: "red", scale: 50 } },
        { type: "capture", what: { tab: "red", region: { x: 0, y: 0, width: 100, height: 40 }, scale: 200 } },
      ],
    });
    expect(r.stopped_at, JSON.stringify(r.results).slice(0, 300)).toBeNull();
    expect(r.results[0]).toMatchObject({ ok: true, width: 120, height: 60 });
    const part = decodePng(Buffer.from(r.results[0].png_base64, "base64"));
    expect([part.width, part.height, ...part.rgb(60, 30)]).toEqual([120, 60, 255, 0, 0]);
    const [w, h] = await evalIn<number[]>(red, "[innerWidth, innerHeight]");
    const half = decodePng(Buffer.from(r.results[1].png_base64, "base64"));
    expect([half.width, half.height]).toEqual([Math.round(w / 2), Math.round(h / 2)]);
    expect(half.rgb(5, 5)).toEqual([255, 0, 0]);
    expect(r.results[2]).toMatchObject({ width: 200, height: 80 });
  });

  it("answers not_found for a tab that does not exist, and refuses window or pointer with a tab", async () => {
    const r = await batch(agent, 0, { actions: [{ type: "capture", what: { tab: "no-such-tab" } }] });
    expect(r.results[0]).toMatchObject({ ok: false, code: "not_found" });
    expect(r.stopped_at).toBe(0);
    for (const what of [{ tab: "red", pointer: true }, { tab: "red", window: "Chromium" }]) {
      const bad = await agent.call("POST", "/screens/0/batch", { actions: [{ type: "capture", what }] });
      expect(bad.status).toBe(400);
      expect(bad.body.message).toMatch(/what\.tab/);
    }
  });
});

describe("steps not built yet", () => {
  // The seed's Example batch (000, "Example"), with a local page for https://example.com.
  const example = (url: string) => [
    { type: "open_url", url },
    { type: "on_page", what: { op: "wait_for", query: "Example Domain" } },
    { type: "on_page", what: { op: "click", query: "More information" } },
  ];
  const page = "data:text/html,<title>Example Domain</title><h1>Example Domain</h1><a href='about:blank'>More information</a>";

  it("the seed's Example batch runs open_url, then stops at the first on_page step: unsupported, stopped_at 1", async () => {
    const before = (await chromePages()).length;
    const r = await batch(agent, 0, { actions: example(page), want: ["frame"] });
    expect(r.results).toHaveLength(2);
    expect(r.results[0]).toMatchObject({ ok: true, tab: { title: "Example Domain" } });
    expect(r.results[1]).toMatchObject({ ok: false, code: "unsupported" });
    expect(r.results[1].message).toMatch(/on_page/);
    expect(r.stopped_at).toBe(1);
    expect(r.frame).toMatchObject({ unchanged: false });
    const pages = await chromePages();
    expect(pages).toHaveLength(before + 1);
    expect(pages[0].id).toBe(r.results[0].tab.id);
    expect(await evalIn(pages[0].id, "document.title")).toBe("Example Domain");
  });

  it("with keep_going, goes on past each unsupported step", async () => {
    const r = await batch(agent, 0, { actions: [...example(page), { type: "tabs" }], keep_going: true });
    expect(r.results.map((x: { ok: boolean; code?: string }) => x.code ?? x.ok)).toEqual([true, "unsupported", "unsupported", true]);
    expect(r.stopped_at).toBeNull();
  });

  it("every kind not built yet answers unsupported; a malformed one refuses the batch before anything runs", async () => {
    const later = [
      { type: "on_page", what: { op: "fill", query: "Email", text: "me@example.com" } },
      { type: "look", what: { query: "Sign in" } },
      { type: "snapshot" },
      { type: "read", what: { format: "markdown" } },
      { type: "evaluate", what: { expression: "document.title" } },
      { type: "page_shot", what: { full: true } },
      { type: "dialog", accept: true },
      { type: "on_node", what: { op: "find", node: { query: "Street", role: "text" } } },
    ];
    const r = await batch(agent, 0, { actions: later, keep_going: true });
    expect(r.results.map((x: { code?: string }) => x.code)).toEqual(later.map(() => "unsupported"));
    const before = (await chromePages()).length;
    for (const bad of [
      { type: "on_page", what: { op: "explode", query: "x" } },
      { type: "on_page", what: { op: "click", qeury: "More information" } },
      { type: "evaluate", what: {} },
      { type: "look", what: { query: "x", colour: "red" } },
    ]) {
      const res = await agent.call("POST", "/screens/0/batch", { actions: [{ type: "open_url", url: page }, bad] });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.body.message).toMatch(new RegExp(`step 1 \\(${bad.type}\\)`));
    }
    expect(await chromePages()).toHaveLength(before);
  });
});
