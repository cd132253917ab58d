import { type Browser, type BrowserContext, type Page, type TestInfo, chromium, expect, test } from "@playwright/test";
import { CHROMIUM_ARGS, CHROMIUM_PATH, signUp } from "../support/browser";
import { Page as BoxPage } from "../support/cdp";
import { clickBoxAt, gotoWhole, layout, paintedFrames, recordViewer, restoredCount, waitForScreen, waitForViewerState } from "../support/live-screen";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { attachShot } from "../support/shots";

// The live view on a box's page against a real box: no phantom paste in the trace when a person
// takes over, the watcher count with Chromium's back/forward cache on, the screen's size (fit,
// 1:1, fullscreen), the pop-out window, the keyboard shortcuts, no black flash between watching
// and control, and a viewer's "View only".

let server: TestServer;
let key = "";
let boxId = "";
let state: Awaited<ReturnType<BrowserContext["storageState"]>>;
let cdp: BoxPage | undefined;

// A page in the box that is colourful everywhere, so a black or blank screen is easy to tell.
const BOX_PAGE = `<!doctype html><html><body style="margin:0;background:#1e3a8a">
<div style="position:absolute;left:0;top:0;width:100%;height:45%;background:rgb(230,40,140)"></div>
<div style="position:absolute;left:0;top:45%;width:50%;height:55%;background:rgb(40,200,90)"></div>
<div style="position:absolute;left:50%;top:45%;width:50%;height:55%;background:rgb(250,200,40)"></div>
<input id="t" style="position:absolute;left:60%;top:60%;width:30%;height:60px;font-size:28px" autocomplete="off">
<script>window.keys = []; addEventListener("keydown", (e) => keys.push(e.key), true);
window.downs = []; addEventListener("mousedown", (e) => downs.push([e.screenX, e.screenY]), true);</script>
</body></html>`;

const v1 = (path: string, init: RequestInit & { json?: unknown } = {}) => server.api(path, init);
const asKey = (path: string, body?: unknown) =>
  fetch(`${server.base}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
const viewers = async (id = boxId) => json(await v1(`/v1/boxes/${id}/screens/0/viewers`));
/** The data of every person_input entry in the box's trace, read through /v1 page by page. */
async function personInputs(): Promise<any[]> {
  const out: any[] = [];
  for (let after = -1; ; ) {
    const page = await json(await v1(`/v1/boxes/${boxId}/trace?limit=500&after=${after}`));
    out.push(...(page.entries as any[]).filter((e) => e.event === "person_input").map((e) => e.data));
    if (page.next === null) return out;
    after = page.next;
  }
}

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }) => {
  server = await startServer();
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(server.base);
  await signUp(page, "Ada", "ada@example.com", "Research");
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  await page.getByRole("link", { name: "API keys" }).click();
  await page.getByLabel("Name", { exact: true }).fill("agent");
  await page.getByRole("button", { name: "Create key" }).click();
  key = (await page.getByTestId("new-key").textContent())!.trim();
  const box = await json(await asKey("/v1/boxes", { spec: { desktop: { width: 1280, height: 800 } } }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  boxId = box.id;
  const url = `data:text/html;base64,${Buffer.from(BOX_PAGE).toString("base64")}`;
  const opened = await asKey(`/v1/boxes/${boxId}/screens/0/actions`, { actions: [{ type: "open_url", url, target: "current" }] });
  expect(opened.status, await opened.clone().text()).toBe(200);
  cdp = await BoxPage.open(server, boxId);
  await expect.poll(() => cdp!.evaluate("Array.isArray(window.keys)"), { timeout: 20_000 }).toBe(true);
  state = await context.storageState();
  await context.close();
});

test.afterAll(async () => {
  cdp?.close();
  await server?.stop();
  await removeTestBoxes();
});

async function openBoxPage(browser: Browser, viewport = { width: 1440, height: 900 }) {
  const context = await browser.newContext({ storageState: state, viewport });
  const page = await context.newPage();
  const viewer = await recordViewer(page, server);
  await gotoWhole(page, `${server.base}/boxes/${boxId}`);
  await waitForViewerState(page, viewer, "connected");
  return { context, page, viewer };
}

test("taking over records no paste nobody made; a real paste is recorded with its size", async ({ browser }, info) => {
  const { context, page } = await openBoxPage(browser);
  const before = (await personInputs()).length;
  await page.getByRole("button", { name: "Take over" }).click();
  await expect(page.getByTestId("control-banner")).toContainText("You have control");
  await expect(page.getByTestId("vnc")).toHaveAttribute("data-mode", "control");
  await expect(page.getByTestId("vnc")).toHaveAttribute("data-state", "connected");
  // The phantom came about a second after the control connection opened.
  await page.waitForTimeout(4000);
  const inputs = (await personInputs()).slice(before);
  expect(inputs.filter((d) => d.kind === "clipboard"), JSON.stringify(inputs)).toEqual([]);

  // A real paste, through the clipboard panel: one entry, its size in bytes.
  await page.getByLabel("Text for the box").fill("héllo-clip");
  await page.getByRole("button", { name: "Send to box clipboard" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Sent" })).toBeVisible();
  await expect.poll(async () => (await personInputs()).slice(before).filter((d) => d.kind === "clipboard")).toHaveLength(1);
  await page.waitForTimeout(2000);
  const clips = (await personInputs()).slice(before).filter((d) => d.kind === "clipboard");
  expect(clips).toEqual([expect.objectContaining({ kind: "clipboard", bytes: Buffer.byteLength("héllo-clip") })]);
  await attachShot(page, info, "in control, no phantom paste");
  await page.getByRole("button", { name: "Give back" }).click();
  await expect(page.getByTestId("control-banner")).toContainText("The agent has control");
  await context.close();
});

test("with the back/forward cache on, one person watching is counted once", async ({}, info) => {
  // Playwright's default launch passes --disable-back-forward-cache; people's browsers do not.
  const bf = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, ignoreDefaultArgs: ["--disable-back-forward-cache"] });
  try {
    const context = await bf.newContext({ storageState: state, viewport: { width: 1440, height: 900 } });
    await context.addInitScript(() => {
      addEventListener("pageshow", (e) => {
        if (e.persisted) (window as any).__restored = ((window as any).__restored ?? 0) + 1;
      });
    });
    const page = await context.newPage();
    const boxUrl = `${server.base}/boxes/${boxId}`;
    const counters = page.getByTestId("screen-counters");
    const exactlyOne = async (what: string) => {
      await expect(page.getByTestId("vnc"), what).toHaveAttribute("data-state", "connected");
      await expect.poll(async () => (await viewers()).watching, { message: what, timeout: 15_000 }).toBe(1);
      await expect(counters, what).toHaveText("1 watching · 0 driving");
      // And it stays so (a count that creeps up later is the bug too).
      await page.waitForTimeout(1000);
      expect((await viewers()).watching, what).toBe(1);
      await expect(counters, what).toHaveText("1 watching · 0 driving");
    };
    const away = async (what: string) => {
      await page.goto(`${server.base}/members`);
      await expect(page.getByRole("heading", { name: /^Members of/ })).toBeVisible();
      // The box page sits in the cache, frozen: nobody watches from it.
      await expect.poll(async () => (await viewers()).watching, { message: what, timeout: 5000 }).toBe(0);
    };
    await page.goto(boxUrl);
    await exactlyOne("first visit");
    // Box page, another page, the box page again (a new entry each time): the pages left behind stay cached.
    for (let round = 1; round <= 3; round++) {
      await away(`away #${round}`);
      await page.goto(boxUrl);
      await exactlyOne(`visit #${round + 1}`);
    }
    // Back and forward through the cached entries, and reloads.
    for (let round = 1; round <= 2; round++) {
      await page.goBack({ waitUntil: "commit" });
      await expect(page.getByRole("heading", { name: /^Members of/ })).toBeVisible();
      // The box page went into the cache as it was left: its socket closes with it, and the
      // server counts it out when it sees the close (a loaded CI run asked before that).
      await expect.poll(async () => (await viewers()).watching, { message: `back #${round}`, timeout: 5000 }).toBe(0);
      await page.goBack({ waitUntil: "commit" });
      await expect(page).toHaveURL(boxUrl);
      const restored = await restoredCount(page);
      expect(restored, "the page came back from the back/forward cache").toBeGreaterThan(0);
      await exactlyOne(`after back #${round} (restored from the cache)`);
      await page.reload();
      await exactlyOne(`after reload #${round}`);
    }
    await attachShot(page, info, "one watching after back, forward and reload");
    await context.close();
  } finally {
    await bf.close();
  }
});

test("a page whose JavaScript stops is counted out by the server within 20 s, and comes back", async () => {
  // A browser of its own: twice in CI (of some fifteen runs) the test after this one, in the
  // shared browser, saw its box page connect and then reach the server no more ("Failed to
  // fetch", socket.io "connecting…") for 30 s while the server answered everyone else; this is
  // the only test that stops a page in the debugger.
  const own = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
  try {
    await pausedPageIsCountedOut(own);
  } finally {
    await own.close();
  }
});

async function pausedPageIsCountedOut(browser: Browser) {
  const { context, page } = await openBoxPage(browser);
  await expect.poll(async () => (await viewers()).watching).toBe(1);
  // Paused in a debugger, the page answers nothing; its browser still answers WebSocket pings.
  const cdp = await context.newCDPSession(page);
  await cdp.send("Debugger.enable");
  await cdp.send("Debugger.pause");
  const pausedAt = Date.now();
  await expect.poll(async () => (await viewers()).watching, { timeout: 25_000, intervals: [500] }).toBe(0);
  const tookMs = Date.now() - pausedAt;
  expect(tookMs).toBeLessThan(21_000);
  console.log(`a frozen page was counted out after ${(tookMs / 1000).toFixed(1)} s`);
  await cdp.send("Debugger.resume");
  await expect(page.getByTestId("vnc")).toHaveAttribute("data-state", "connected", { timeout: 20_000 });
  await expect.poll(async () => (await viewers()).watching).toBe(1);
  await context.close();
}

test("the screen fills the width at 1440×900; Fit and 1:1; fullscreen; nothing scrolls sideways at 390 px", async ({ browser }, info) => {
  const { context, page, viewer } = await openBoxPage(browser);
  await waitForScreen(page, viewer);
  const fit = await layout(page);
  // As wide as the column (the screen's own height allows 96% of it here), and all of it in the window.
  expect(fit.w / fit.avail, JSON.stringify(fit)).toBeGreaterThan(0.93);
  expect(fit.h).toBeLessThanOrEqual(fit.vh - 40);
  expect(fit.w / fit.h).toBeCloseTo(1.6, 2);
  await expect(page.getByRole("button", { name: "Fit" })).toHaveAttribute("aria-pressed", "true");
  await attachShot(page, info, "fit at 1440×900");

  // 1:1: one box pixel per device pixel.
  await page.getByRole("button", { name: "1:1" }).click();
  await expect(page.getByRole("button", { name: "1:1" })).toHaveAttribute("aria-pressed", "true");
  await expect.poll(async () => ((l) => [l.w, l.h])(await layout(page))).toEqual([1280, 800]);
  await attachShot(page, info, "1:1 at 1440×900");
  // In a smaller window it scrolls inside the frame, not the page.
  await page.setViewportSize({ width: 1000, height: 700 });
  await expect.poll(async () => ((l) => l.area.sw > l.area.w && l.area.sh > l.area.h)(await layout(page))).toBe(true);
  const small = await layout(page);
  expect([small.w, small.h]).toEqual([1280, 800]);
  expect(small.pageScrollsSideways).toBe(false);
  await page.getByTestId("screen-area").evaluate((el) => el.scrollTo(10_000, 10_000));
  expect(await page.getByTestId("screen-area").evaluate((el) => [el.scrollLeft > 0, el.scrollTop > 0])).toEqual([true, true]);
  await attachShot(page, info, "1:1 at 1000×700, scrolled");

  // Fit again, and the choice is kept for the next page.
  await page.getByRole("button", { name: "Fit" }).click();
  await expect.poll(async () => ((l) => l.w / l.avail)(await layout(page))).toBeGreaterThan(0.97);
  await page.setViewportSize({ width: 1440, height: 900 });

  // Fullscreen: the screen's frame fills the display, the whole screen in it; Esc leaves.
  await page.getByRole("button", { name: "Fullscreen" }).click();
  await expect.poll(() => page.evaluate(() => document.fullscreenElement?.getAttribute("data-testid") ?? null)).toBe("screen-frame");
  await expect(page.getByRole("button", { name: "Exit fullscreen" })).toBeVisible();
  await expect
    .poll(async () => ((l) => l.w <= l.vw && l.h <= l.vh && (l.w >= l.vw - 20 || l.h >= l.vh - 60))(await layout(page)))
    .toBe(true);
  await attachShot(page, info, "fullscreen");
  await page.keyboard.press("Escape");
  if (await page.evaluate(() => document.fullscreenElement !== null)) {
    // Headless Chromium leaves Esc to the page; a person's browser exits on it. The button does too.
    await page.getByRole("button", { name: "Exit fullscreen" }).click();
  }
  await expect.poll(() => page.evaluate(() => document.fullscreenElement)).toBeNull();
  await expect(page.getByRole("button", { name: "Fullscreen" })).toBeVisible();

  // A phone's width: the page does not scroll sideways, the screen fits.
  await page.setViewportSize({ width: 390, height: 844 });
  await expect.poll(async () => ((l) => !l.pageScrollsSideways && l.w <= 390)(await layout(page))).toBe(true);
  await attachShot(page, info, "390 px wide", { fullPage: true });
  await context.close();
});

test("Pop out opens the screen alone in a window that follows take over and give back", async ({ browser }, info) => {
  const { context, page } = await openBoxPage(browser);
  const [popup] = await Promise.all([context.waitForEvent("page"), page.getByRole("button", { name: "Pop out" }).click()]);
  await expect(popup).toHaveURL(`${server.base}/boxes/${boxId}/screen?screen=0`);
  const pv = popup.getByTestId("vnc");
  await expect(pv).toHaveAttribute("data-state", "connected");
  await expect(pv).toHaveAttribute("data-mode", "view");
  await expect(popup.getByRole("navigation", { name: "Console" })).toHaveCount(0);
  await expect.poll(async () => (await viewers()).watching).toBe(2);
  // The live screen: the box's pink top half shows in the pop-out's canvas.
  await expect
    .poll(() =>
      popup.locator("[data-testid=vnc] canvas").evaluate((c: HTMLCanvasElement) => [...c.getContext("2d")!.getImageData(640, 100, 1, 1).data].slice(0, 3)),
    )
    .toEqual([230, 40, 140]);
  await attachShot(popup, info, "pop-out watching");

  // Taken over on the page: the pop-out drives too.
  await page.getByRole("button", { name: "Take over" }).click();
  await expect(popup.getByTestId("control-banner")).toContainText("You have control");
  await expect(pv).toHaveAttribute("data-mode", "control");
  await expect(pv).toHaveAttribute("data-state", "connected");
  await expect.poll(async () => (await viewers()).driving).toBe(2);
  await attachShot(popup, info, "pop-out in control");

  // Given back from the pop-out: the page follows.
  await popup.getByRole("button", { name: "Give back" }).click();
  await expect(page.getByTestId("control-banner")).toContainText("The agent has control");
  await expect(page.getByTestId("vnc")).toHaveAttribute("data-mode", "view");
  await expect(pv).toHaveAttribute("data-mode", "view");
  await expect.poll(async () => (await viewers()).driving).toBe(0);
  // And taken over from the pop-out: the page follows.
  await popup.getByRole("button", { name: "Take over" }).click();
  await expect(page.getByTestId("control-banner")).toContainText("You have control");
  await expect(page.getByTestId("vnc")).toHaveAttribute("data-mode", "control");
  await page.getByRole("button", { name: "Give back" }).click();
  await expect(popup.getByTestId("control-banner")).toContainText("The agent has control");
  await popup.close();
  await expect.poll(async () => (await viewers()).watching).toBe(1);
  await context.close();
});

/**
 * Clicks an element of the box's page through the console's screen until it has the focus. A CI
 * run once saw a first click after taking over leave the field unfocused (never here, in dozens of
 * runs, loaded or not). A person would click again; so does this, once, and the test says what the
 * missed click did: whether the server passed it on (the trace's person_input) and whether the
 * box's page saw a mousedown, and where, and the viewer's state.
 */
async function clickToFocus(page: Page, info: TestInfo, selector: string) {
  const focused = () => cdp!.evaluate<string>("document.activeElement && document.activeElement.id");
  const at = await cdp!.centre(selector);
  const inputsBefore = (await personInputs()).length;
  await cdp!.evaluate("window.downs.length = 0");
  // What the console's page itself saw: which element each press reached.
  await page.evaluate(() => {
    const w = window as unknown as { seen?: string[] };
    w.seen = [];
    for (const type of ["mousedown", "mouseup"])
      addEventListener(type, (ev) => {
        const e = ev as MouseEvent;
        const t = e.target as HTMLElement;
        w.seen!.push(`${type} ${t.tagName}${t.dataset?.testid ? `[${t.dataset.testid}]` : ""} at ${e.clientX},${e.clientY}`);
      }, true);
  });
  await clickBoxAt(page, at);
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && (await focused()) !== selector.slice(1)) await page.waitForTimeout(100);
  if ((await focused()) === selector.slice(1)) return;
  const pointer = (await personInputs()).slice(inputsBefore).filter((d) => d.kind === "click");
  const downs = await cdp!.evaluate<number[][]>("window.downs");
  const console_ = await page.getByTestId("vnc").evaluate((el: HTMLElement) => ({ ...el.dataset }));
  const banner = await page.getByTestId("control-banner").textContent();
  const dom = await page.evaluate(() => {
    const vnc = document.querySelector("[data-testid=vnc]")!;
    const canvases = [...document.querySelectorAll("canvas")].map((c) => {
      const r = c.getBoundingClientRect();
      return `${c.closest("[data-testid]")?.getAttribute("data-testid")}: ${c.width}x${c.height} at ${r.left},${r.top} ${r.width}x${r.height}`;
    });
    const r = vnc.getBoundingClientRect();
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2) as HTMLElement | null;
    return {
      canvases,
      screens: vnc.children.length,
      hitAtCentre: hit ? `${hit.tagName}${hit.dataset?.testid ? `[${hit.dataset.testid}]` : ""}` : null,
      active: document.activeElement?.tagName,
      // noVNC's mouse capture: a full-window layer shown from a press on the screen to its release.
      capture: document.getElementById("noVNC_mouse_capture_elem")?.style.display ?? "none yet",
      seen: (window as unknown as { seen?: string[] }).seen,
    };
  });
  const description =
    `aimed at ${JSON.stringify(at)}; the server passed on ${JSON.stringify(pointer)}; the box's page saw mousedowns at ` +
    `${JSON.stringify(downs)}; the viewer: ${JSON.stringify(console_)}, "${banner}", ${JSON.stringify(await viewers())}; the console page: ${JSON.stringify(dom)}`;
  info.annotations.push({ type: "missed click", description });
  await attachShot(page, info, "a click missed");
  console.log(`a click missed ${selector}: ${description}`);
  await clickBoxAt(page, await cdp!.centre(selector));
  await expect.poll(focused).toBe(selector.slice(1));
}

test("Ctrl+Alt+Shift+T takes over and Ctrl+Alt+Shift+G gives back, even while the screen has the keyboard", async ({ browser }, info) => {
  const { context, page } = await openBoxPage(browser);
  const vnc = page.getByTestId("vnc");
  const banner = page.getByTestId("control-banner");
  await expect(page.getByRole("button", { name: "Take over" })).toHaveAttribute("aria-keyshortcuts", "Control+Alt+Shift+T");
  await cdp!.evaluate("document.getElementById('t').value = ''; window.keys.length = 0");

  await page.keyboard.press("Control+Alt+Shift+KeyT");
  await expect(banner).toContainText("You have control");
  await expect(vnc).toHaveAttribute("data-mode", "control");
  await expect(vnc).toHaveAttribute("data-state", "connected");
  // The keyboard goes to the box at once.
  await expect.poll(() => page.evaluate(() => document.activeElement?.tagName)).toBe("CANVAS");
  await expect(page.getByRole("button", { name: "Give back" })).toHaveAttribute("aria-keyshortcuts", "Control+Alt+Shift+G");
  await clickToFocus(page, info, "#t");
  await page.keyboard.type("hello");
  await expect.poll(() => cdp!.evaluate("document.getElementById('t').value")).toBe("hello");
  await attachShot(page, info, "taken over with the shortcut");

  // With the screen focused, the give-back chord still reaches the page, not the box.
  expect(await page.evaluate(() => document.activeElement?.tagName)).toBe("CANVAS");
  // The modifiers stay held until the screen is back with the agent (a person lets go late).
  for (const k of ["Control", "Alt", "Shift"]) await page.keyboard.down(k);
  await page.keyboard.press("KeyG");
  await expect(banner).toContainText("The agent has control");
  await expect(vnc).toHaveAttribute("data-mode", "view");
  await expect.poll(async () => (await viewers()).driving).toBe(0);
  for (const k of ["Shift", "Alt", "Control"]) await page.keyboard.up(k);
  const keys = await cdp!.evaluate<string[]>("window.keys");
  expect(keys.filter((k) => k.toLowerCase() === "g" || k.toLowerCase() === "t"), JSON.stringify(keys)).toEqual([]);
  // No modifier stays held in the box: the agent's typing arrives as typed.
  const typed = await asKey(`/v1/boxes/${boxId}/screens/0/actions`, { actions: [{ type: "type", text: " world" }] });
  expect(typed.status, await typed.clone().text()).toBe(200);
  await expect.poll(() => cdp!.evaluate("document.getElementById('t').value")).toBe("hello world");
  await context.close();
});

test("no black flash between watching and control: the last frame stays until the next one paints", async ({ browser }) => {
  const { context, page, viewer } = await openBoxPage(browser);
  const vnc = page.getByTestId("vnc");
  await page.getByTestId("vnc").scrollIntoViewIfNeeded();
  // The box's screen is colourful everywhere (its Chromium's bars are light): any dark is the viewer's.
  const switches: [string, () => Promise<void>][] = [
    [
      "take over",
      async () => {
        await page.getByRole("button", { name: "Take over" }).click();
        await expect(vnc).toHaveAttribute("data-mode", "control");
        await expect(vnc).toHaveAttribute("data-state", "connected");
      },
    ],
    [
      "give back",
      async () => {
        await page.getByRole("button", { name: "Give back" }).click();
        await expect(vnc).toHaveAttribute("data-mode", "view");
        await expect(vnc).toHaveAttribute("data-state", "connected");
      },
    ],
  ];
  for (const [what, run] of switches) {
    const dark = await paintedFrames(page, viewer, run);
    expect(dark.length, `${what}: frames painted`).toBeGreaterThan(2);
    expect(Math.max(...dark), `${what}: the darkest frame's dark share (of ${dark.length} frames: ${dark.map((d) => d.toFixed(2)).join(" ")})`).toBeLessThan(0.05);
  }
  await context.close();
});

test("a viewer sees View only and why; so does a member while another person has the screen", async ({ browser }, info) => {
  const { context: adaContext, page: ada } = await openBoxPage(browser);
  const invite = async (email: string, role: string) => {
    await ada.goto(`${server.base}/members`);
    await ada.getByLabel("Email").fill(email);
    await ada.getByLabel("Role", { exact: true }).selectOption(role);
    await ada.getByRole("button", { name: "Create invitation" }).click();
    return (await ada.getByTestId("invite-link").textContent())!.trim();
  };
  const join = async (link: string, name: string, email: string) => {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await context.newPage();
    await page.goto(link);
    await signUp(page, name, email);
    await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
    await page.goto(`${server.base}/boxes/${boxId}`);
    await expect(page.getByTestId("vnc")).toHaveAttribute("data-state", "connected");
    return { context, page };
  };
  const vic = await join(await invite("vic@example.com", "viewer"), "Vic", "vic@example.com");
  const bo = await join(await invite("bo@example.com", "member"), "Bo", "bo@example.com");

  const vicNote = vic.page.getByTestId("view-only");
  await expect(vicNote).toContainText("View only");
  await expect(vicNote).toContainText("Your role in this workspace (viewer) lets you watch; members can take over.");
  await expect(vic.page.getByRole("button", { name: "Take over" })).toHaveCount(0);
  // Shortcuts do nothing for a viewer either.
  await vic.page.keyboard.press("Control+Alt+Shift+KeyT");
  await vic.page.waitForTimeout(1000);
  expect((await viewers()).driving).toBe(0);
  await attachShot(vic.page, info, "viewer: view only");

  // Bo may take over, until Ada has the screen.
  await expect(bo.page.getByRole("button", { name: "Take over" })).toBeVisible();
  await expect(bo.page.getByTestId("view-only")).toHaveCount(0);
  await ada.goto(`${server.base}/boxes/${boxId}`);
  await ada.getByRole("button", { name: "Take over" }).click();
  await expect(ada.getByTestId("control-banner")).toContainText("You have control");
  const boNote = bo.page.getByTestId("view-only");
  await expect(boNote).toContainText("View only");
  await expect(boNote).toContainText("Ada has this screen; you can take over once they give it back.");
  await expect(bo.page.getByRole("button", { name: "Take over" })).toHaveCount(0);
  await expect(bo.page.getByTestId("screen-counters")).toHaveText("3 watching · 1 driving");
  await attachShot(bo.page, info, "member while Ada has the screen");
  await ada.getByRole("button", { name: "Give back" }).click();
  await expect(bo.page.getByRole("button", { name: "Take over" })).toBeVisible();
  await expect(vicNote).toContainText("View only");
  for (const c of [vic.context, bo.context, adaContext]) await c.close();
});

test("a box set to record takeovers says so before and while a person has the screen, and records that time", async ({ browser }, info) => {
  const { context, page } = await openBoxPage(browser);
  const recordSwitch = page.getByRole("switch", { name: /Record while a person has the screen/ });
  await expect(recordSwitch).toHaveAttribute("aria-checked", "false");
  await expect(page.getByTestId("takeover-recorded")).toHaveCount(0);
  await recordSwitch.click();
  await expect(recordSwitch).toHaveAttribute("aria-checked", "true");
  await expect(page.getByTestId("takeover-recorded")).toHaveText("Taking over records the screen");

  await page.getByRole("button", { name: "Take over" }).click();
  await expect(page.getByTestId("control-banner")).toContainText("You have control");
  await expect(page.getByTestId("takeover-recorded")).toHaveText("● Recorded into the trace");
  await expect.poll(async () => (await json(await asKey(`/v1/boxes/${boxId}/screens/0/recording`))).recording, { timeout: 10_000 }).toBe(true);
  await attachShot(page, info, "recorded takeover");
  await page.getByRole("button", { name: "Give back" }).click();
  await expect(page.getByTestId("control-banner")).toContainText("The agent has control");
  await expect.poll(async () => (await json(await asKey(`/v1/boxes/${boxId}/screens/0/recording`))).recording, { timeout: 20_000 }).toBe(false);
  // The video is copied into the store after the recorder stops: it is listed once that is done.
  await expect
    .poll(async () => (await json(await asKey(`/v1/boxes/${boxId}/trace/recordings`))).recordings.length, { timeout: 20_000 })
    .toBeGreaterThanOrEqual(1);

  // Off again: nothing says a takeover is recorded.
  await recordSwitch.click();
  await expect(recordSwitch).toHaveAttribute("aria-checked", "false");
  await expect(page.getByTestId("takeover-recorded")).toHaveCount(0);
  await context.close();
});
