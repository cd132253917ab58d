import { type Page, expect, test } from "@playwright/test";
import { signUpAndKey } from "../support/browser";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { attachShot, refuseNativeDialogs } from "../support/shots";

// "Fork from here" on the trace page of a real box (issue 14, bug 7): the pending state and the
// result show where the person clicked, in view and with the focus; the new box's start and the
// replay's attempted / ok count up live; the report and the link. And the timeline's
// descriptions: cut only between words, whole on focus and on hover, at 1440 and 390 px, with
// no sideways scroll at 390.

let server: TestServer;
let key: string;
let source: any;
let entries: any[] = [];

test.beforeAll(async () => {
  server = await startServer();
});

test.afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

const BATCHES = 5;
/** The gap between the source's batches: the replay waits as long (at most 2 s) before each. */
const GAP_MS = 1500;
const ARGV = ["echo", "replayed", "carefully", "every", "recorded", "step", "of", "this", "particular", "trace"];
const LONG = `ran ${ARGV.join(" ")}`;
/** One word longer than a narrow row: it has to break somewhere, and must not push the page sideways. */
const PATH = "/tmp/a_path_with_no_spaces_that_is_longer_than_any_row_is_wide_at_all";

function colourPage(n: number): string {
  const html = `<!doctype html><html><body style="margin:0;height:100vh;background:hsl(${n * 67},60%,60%)"></body></html>`;
  return `data:text/html;base64,${Buffer.from(html).toString("base64")}`;
}

const api = (p: string, init: { method?: string; json?: unknown; headers?: Record<string, string> } = {}) =>
  fetch(`${server.base}${p}`, {
    method: init.method ?? "GET",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers },
    body: init.json === undefined ? undefined : JSON.stringify(init.json),
  });

async function batch(body: unknown) {
  const res = await api(`/v1/boxes/${source.id}/screens/0/actions`, { method: "POST", json: body });
  expect(res.status, await res.clone().text()).toBe(200);
}

/** Window height, and where an element is, in the viewport. */
async function inView(page: Page, testId: string) {
  const bb = (await page.getByTestId(testId).boundingBox())!;
  const height = await page.evaluate(() => window.innerHeight);
  return { top: bb.y, bottom: bb.y + bb.height, height };
}

/** Scrolls the page so that the Fork button sits on the bottom edge of the window: whatever grows below it is out of view unless the page brings it in. */
async function forkButtonAtTheFold(page: Page) {
  const button = page.getByRole("button", { name: "Fork from here" });
  await button.scrollIntoViewIfNeeded();
  await page.evaluate(() => {
    const b = [...document.querySelectorAll("button")].find((x) => x.textContent?.trim() === "Fork from here")!;
    window.scrollBy(0, b.getBoundingClientRect().bottom - window.innerHeight + 2);
  });
  const bb = (await button.boundingBox())!;
  const height = await page.evaluate(() => window.innerHeight);
  expect(bb.y + bb.height).toBeGreaterThan(height - 10);
  expect(bb.y + bb.height).toBeLessThanOrEqual(height);
  return button;
}

async function noSidewaysScroll(page: Page) {
  const { scroll, client } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
  expect(scroll, "the page scrolls sideways").toBeLessThanOrEqual(client);
}

test.describe.configure({ mode: "serial" });

test("a trace made of batches spaced in time", async ({ page }) => {
  key = await signUpAndKey(page, server, "Forker");
  source = await json(await api("/v1/boxes", { method: "POST", json: { spec: { desktop: { features: [] } } } }));
  expect(source.state, JSON.stringify(source)).toBe("ready");
  // A file written (not done again: the trace does not keep its contents), then batches that
  // paint the screen, the long command among them.
  await batch({ actions: [{ type: "write_file", what: { path: "/tmp/marker.txt", contents_base64: Buffer.from("hi").toString("base64") } }] });
  for (let i = 0; i < BATCHES; i++) {
    if (i) await new Promise((r) => setTimeout(r, GAP_MS));
    const steps: unknown[] = [{ type: "open_url", url: colourPage(i), target: "current" }];
    if (i === 2) steps.push({ type: "exec", what: { argv: ARGV } }, { type: "exec", what: { argv: ["echo", PATH] } });
    await batch({ actions: steps, want: ["frame"], settle_ms: 200 });
  }
  await expect
    .poll(async () => {
      entries = (await json(await api(`/v1/boxes/${source.id}/trace?limit=500`))).entries;
      return entries.filter((e) => e.event === "frame").length;
    })
    .toBeGreaterThanOrEqual(BATCHES);
});

test("Fork from here: pending and result in view where the person clicked, the replay counted live, the report, the link", async ({ page }, testInfo) => {
  refuseNativeDialogs(page);
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(`${server.base}/login`);
  await page.getByLabel("Email").fill("forker@example.com");
  await page.getByLabel("Password").fill("correct horse battery");
  await page.getByRole("button", { name: /log in|sign in/i }).click();
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();

  const lastActed = entries.filter((e) => e.event === "acted").at(-1)!;
  await page.goto(`${server.base}/boxes/${source.id}/trace?seq=${lastActed.seq}`);
  await expect(page.getByTestId("trace-slider")).toHaveValue(String(lastActed.seq));
  const button = await forkButtonAtTheFold(page);

  // Every state the panel goes through, as it renders: its text, where it is, whether it has the focus.
  await page.evaluate(() => {
    const w = window as unknown as { seen: { text: string; top: number; bottom: number; focus: boolean; count: string | null }[] };
    w.seen = [];
    const look = () => {
      const el = document.querySelector<HTMLElement>("[data-testid=fork-status]");
      if (!el) return;
      const r = el.getBoundingClientRect();
      const count = document.querySelector("[data-testid=fork-replay-count]")?.textContent ?? null;
      const text = el.textContent ?? "";
      const last = w.seen[w.seen.length - 1];
      if (last && last.text === text) return;
      w.seen.push({ text, top: r.top, bottom: r.bottom, focus: el.contains(document.activeElement), count });
    };
    new MutationObserver(look).observe(document.body, { subtree: true, childList: true, characterData: true });
  });

  await button.click();
  const status = page.getByTestId("fork-status");
  await expect(status).toBeVisible();
  await expect(page.getByRole("button", { name: "Fork from here" })).toHaveCount(0);
  const link = page.getByTestId("fork-link");
  await expect(link).toBeVisible({ timeout: 30_000 });
  let where = await inView(page, "fork-status");
  expect(where.top).toBeGreaterThanOrEqual(0);
  expect(where.bottom).toBeLessThanOrEqual(where.height);
  await attachShot(page, testInfo, "forked, the box starting");
  const forkId = (await link.getAttribute("href"))!.replace("/boxes/", "");
  expect(forkId).toMatch(/^box_[0-9a-f]+$/);
  await expect(link).toHaveText(`${forkId.slice(0, 16)}…`);

  // The replay counts up, then reports.
  await expect(page.getByTestId("fork-replay-count")).toContainText(/Replaying: \d+ of \d+ steps attempted/, { timeout: 120_000 });
  await attachShot(page, testInfo, "replaying");
  const report = page.getByTestId("fork-replay-report");
  await expect(report).toBeVisible({ timeout: 120_000 });
  where = await inView(page, "fork-status");
  expect(where.top).toBeGreaterThanOrEqual(0);
  expect(where.bottom).toBeLessThanOrEqual(where.height);
  await attachShot(page, testInfo, "replay done");

  const planned = entries.filter((e) => e.event === "acted" && e.data.step.type !== "write_file" && e.seq <= lastActed.seq).length;
  await expect(report).toContainText(`Replay done: ${planned} of ${planned} steps ok`);
  await expect(page.getByTestId("fork-skipped")).toContainText("the trace records that /tmp/marker.txt was written, not what went into it");
  await expect(page.getByTestId("fork-box-state")).toHaveText("ready");

  const seen = await page.evaluate(() => (window as unknown as { seen: { text: string; top: number; bottom: number; focus: boolean; count: string | null }[] }).seen);
  const height = await page.evaluate(() => window.innerHeight);
  // The pending state showed, in view, with the focus, before the result.
  const pending = seen.find((s) => s.text.includes("Forking…"));
  expect(pending, JSON.stringify(seen.map((s) => s.text))).toBeTruthy();
  expect(pending!.top).toBeGreaterThanOrEqual(0);
  expect(pending!.bottom).toBeLessThanOrEqual(height);
  expect(pending!.focus).toBe(true);
  // Every state after it stayed in view, and the focus stayed in the panel.
  for (const s of seen) {
    expect(s.bottom, s.text).toBeLessThanOrEqual(height + 1);
    expect(s.focus, s.text).toBe(true);
  }
  // attempted / ok went up one batch at a time: at least one value between none and all.
  const counts = seen.map((s) => s.count?.match(/Replaying: (\d+) of (\d+) steps attempted, (\d+) ok/)).filter((m) => m !== null && m !== undefined);
  const between = counts.filter((m) => Number(m![1]) > 0 && Number(m![1]) < Number(m![2]));
  expect(between.length, JSON.stringify(seen.map((s) => s.count))).toBeGreaterThan(0);
  const attempted = counts.map((m) => Number(m![1]));
  expect(attempted).toEqual([...attempted].sort((a, b) => a - b));

  // /v1 tells the same: holm's `replay` on the fork.
  const forked = await json(await api(`/v1/boxes/${forkId}`));
  expect(forked.replay).toMatchObject({ total: planned, attempted: planned, ok: planned, done: true, stopped_at: null, truncated: false });

  // The link leads to the new box's page.
  await link.click();
  await expect(page).toHaveURL(new RegExp(`/boxes/${forkId}$`));
  // Its trace page keeps the report after the end, from the fork's trace.
  await page.goto(`${server.base}/boxes/${forkId}/trace`);
  const card = page.getByTestId("fork-card");
  await expect(card).toContainText(`A fork of ${source.id.slice(0, 16)}… up to entry ${lastActed.seq}`);
  await expect(card.getByTestId("fork-replay-report")).toContainText(`Replay done: ${planned} of ${planned} steps ok`);
  await attachShot(page, testInfo, "the fork's trace page");
  await api(`/v1/boxes/${forkId}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
});

/** Each word of the row's description: fully shown, or fully hidden (never cut). */
async function words(page: Page, seq: number) {
  return page.locator(`[data-testid=trace-entry][data-seq="${seq}"] [data-testid=trace-entry-text]`).evaluate((el) => {
    const box = el.getBoundingClientRect();
    const node = el.firstChild as Text;
    const out: { word: string; shown: boolean; cut: boolean }[] = [];
    const re = /\S+/g;
    for (let m = re.exec(node.data); m; m = re.exec(node.data)) {
      const r = document.createRange();
      r.setStart(node, m.index);
      r.setEnd(node, m.index + m[0].length);
      const rects = [...r.getClientRects()].filter((q) => q.width > 0);
      const inside = (q: DOMRect) => q.top >= box.top - 0.5 && q.bottom <= box.bottom + 0.5 && q.right <= box.right + 0.5;
      const shown = rects.length > 0 && rects.every(inside);
      const hidden = rects.every((q) => q.top >= box.bottom - 0.5 || q.left >= box.right - 0.5);
      out.push({ word: m[0], shown, cut: !shown && !hidden });
    }
    return { out, clipped: el.scrollHeight > el.clientHeight + 1 || el.scrollWidth > el.clientWidth + 1, text: node.data };
  });
}

for (const width of [1440, 390]) {
  test(`timeline descriptions at ${width} px: cut only between words, whole on focus and hover; nothing scrolls sideways`, async ({ page }, testInfo) => {
    refuseNativeDialogs(page);
    await page.setViewportSize({ width, height: 900 });
    await page.goto(`${server.base}/login`);
    await page.getByLabel("Email").fill("forker@example.com");
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: /log in|sign in/i }).click();
    await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();

    const ran = entries.find((e) => e.event === "acted" && e.data.step.type === "exec")!;
    const path = entries.find((e) => e.event === "acted" && e.data.step.what?.argv?.[1] === PATH)!;
    // The entry with the long word, selected: its row and the selected entry's panel break it.
    await page.goto(`${server.base}/boxes/${source.id}/trace?seq=${path.seq}`);
    await expect(page.getByTestId("selected-entry")).toContainText(`ran echo ${PATH}`);
    await noSidewaysScroll(page);
    await attachShot(page, testInfo, `a long word selected, ${width} px`);
    // Another entry is selected, so the long one's row is closed.
    await page.goto(`${server.base}/boxes/${source.id}/trace?seq=${ran.seq + 2}`);
    const row = page.locator(`[data-testid=trace-entry][data-seq="${ran.seq}"]`);
    await expect(row).toContainText("ran echo replayed");
    await noSidewaysScroll(page);
    await row.scrollIntoViewIfNeeded();

    // Closed: two lines at most, cut between words; the whole text on hover (title).
    let got = await words(page, ran.seq);
    expect(got.text).toBe(LONG);
    expect(got.clipped, "the row is too wide for the text: make the text longer").toBe(true);
    expect(got.out.filter((w) => w.cut), JSON.stringify(got.out)).toEqual([]);
    expect(got.out.filter((w) => w.shown).length).toBeGreaterThan(1);
    await expect(row.getByRole("button")).toHaveAttribute("title", LONG);
    await attachShot(page, testInfo, `closed row, ${width} px`);

    // Focused from the keyboard (Tab from the row before it): the row opens to its whole text.
    const before = page.locator(`[data-testid=trace-entry][data-seq="${ran.seq - 1}"]`);
    await before.getByRole("button").focus();
    await page.keyboard.press("Tab");
    if ((await before.getByTestId("entry-frame-link").count()) > 0) await page.keyboard.press("Tab");
    await expect(row.getByRole("button")).toBeFocused();
    const whole = async () => {
      const w = await words(page, ran.seq);
      return !w.clipped && w.out.every((x) => x.shown);
    };
    await expect.poll(whole, { timeout: 5000 }).toBe(true);
    // The rows after it moved down, not under it.
    const open = (await row.boundingBox())!;
    const next = (await page.locator(`[data-testid=trace-entry][data-seq="${ran.seq + 1}"]`).boundingBox())!;
    expect(next.y).toBeGreaterThanOrEqual(open.y + open.height - 1);
    await noSidewaysScroll(page);
    await attachShot(page, testInfo, `focused row, ${width} px`);

    // Selected (Enter), it stays open, and the selected entry's panel has the whole text too.
    await page.keyboard.press("Enter");
    await expect(row.getByRole("button").first()).toHaveAttribute("aria-current", "true");
    await expect(page.getByTestId("selected-entry-text")).toHaveText(LONG);
    await page.getByTestId("trace-slider").focus();
    await expect.poll(whole, { timeout: 5000 }).toBe(true);
    await noSidewaysScroll(page);

    // At 390, the fork's panel does not scroll sideways either.
    if (width === 390) {
      await page.getByRole("button", { name: "Fork from here" }).click();
      await expect(page.getByTestId("fork-replay-report")).toBeVisible({ timeout: 120_000 });
      await noSidewaysScroll(page);
      await attachShot(page, testInfo, "fork done, 390 px");
      const href = (await page.getByTestId("fork-link").getAttribute("href"))!;
      await api(`/v1/boxes/${href.replace("/boxes/", "")}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    }
    await attachShot(page, testInfo, `the trace page, ${width} px`, { fullPage: true });
  });
}
