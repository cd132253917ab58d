import { CHROMIUM_ARGS, CHROMIUM_PATH, signUpAndKey } from "../tests/support/browser";
import { type Page, chromium } from "playwright-core";
import { type TestServer, json, removeTestBoxes, startServer } from "../tests/support/server";
import { now, summarize } from "./stats";

// The console's trace page scrubbing a long trace, in headless Chromium: one box on the durable
// store with ~10,000 entries and 256 frames (256 batches that each type one character into a
// page, so every batch changes the screen, padded with `cursor` steps). Then:
//   - GET /v1/boxes/{id}/trace?limit=500 page by page with the bearer token (target p95 ≤ 20 ms);
//   - the page's load (its loader folds the whole trace into a summary; first load, then warm);
//   - the slider moved programmatically across every frame at 60 input events a second for 3 s:
//     how many times a second the large frame draws a new frame that is the one the slider asks
//     for at that moment (target ≥ 30). Cold (nothing fetched yet), warm (decoded frames kept), and
//     cold after 3 s of rest (the page fetches the bytes around the slider while idle).
// `node --import tsx bench/scrub.ts` runs it alone.

const FRAMES = Number(process.env.BENCH_FRAMES ?? 256);
const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 10_000);
const SWEEP_MS = 3000;
const INPUT_HZ = 60;

// No caret and no animation: each typed character changes the screen once, and only then.
const PAGE = `<!doctype html><html><body style="margin:0;font:64px sans-serif;background:#fff">
<div id="t" style="padding:40px;word-break:break-all"></div>
<script>let n = 0; addEventListener("keydown", (e) => { if (e.key.length !== 1) return; n++;
document.getElementById("t").textContent += e.key;
document.body.style.background = "hsl(" + (n * 47) % 360 + ",55%,80%)"; });</script>
</body></html>`;


interface SweepResult {
  ticks: number;
  updates: number;
  draws: number;
  matched: number;
  inputs: number;
  asked: number;
  ms: number;
}

// Runs in the page (as source text: the bundler's helpers do not exist there). Moves the slider
// from one end to the other by input events at `hz`. Counts each draw of the large frame (its
// `data-frame` changes) that shows the frame the slider asks for at that moment (`data-want`),
// and counts the animation frames (the page's own frame rate while it works).
const SWEEP = `({ from, to, ms, hz }) => new Promise((resolve) => {
  const slider = document.querySelector("[data-testid=trace-slider]");
  const canvas = document.querySelector("[data-testid=trace-frame]");
  const setValue = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value").set;
  const t0 = performance.now();
  let inputs = 0, ticks = 0, updates = 0, draws = 0, asked = 0;
  let want = canvas.dataset.want || "";
  const seen = new MutationObserver((records) => {
    for (const r of records) {
      if (r.attributeName === "data-want") {
        const w = canvas.getAttribute("data-want") || "";
        if (w && w !== want) asked++;
        want = w;
      } else {
        draws++;
        if (canvas.dataset.frame && canvas.dataset.frame === want) updates++;
      }
    }
  });
  seen.observe(canvas, { attributes: true, attributeFilter: ["data-frame", "data-want"] });
  const timer = setInterval(() => {
    const f = Math.min(1, (performance.now() - t0) / ms);
    setValue.call(slider, String(Math.round(from + (to - from) * f)));
    slider.dispatchEvent(new Event("input", { bubbles: true }));
    inputs++;
  }, 1000 / hz);
  const tick = () => {
    const el = performance.now() - t0;
    ticks++;
    if (el < ms) requestAnimationFrame(tick);
    else {
      clearInterval(timer);
      seen.disconnect();
      resolve({ ticks, updates, draws, inputs, asked, ms: el });
    }
  };
  requestAnimationFrame(tick);
})`;

function sweep(page: Page, from: number, to: number): Promise<SweepResult> {
  return page.evaluate(`(${SWEEP})(${JSON.stringify({ from, to, ms: SWEEP_MS, hz: INPUT_HZ })})`) as Promise<SweepResult>;
}

function report(name: string, r: SweepResult) {
  const s = r.ms / 1000;
  const perSec = r.updates / s;
  console.log(
    `${name.padEnd(48)} ${perSec.toFixed(1).padStart(6)} updates/s  (the slider asked for a new frame ${r.asked} times, ${r.updates} drawn while still asked; ` +
      `${r.inputs} inputs, ${r.ticks} animation frames)` +
      `  target ≥ 30: ${perSec >= 30 ? "met" : "missed"}`,
  );
}

export async function benchScrub() {
  const server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
  const browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: CHROMIUM_ARGS,
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    const page = await context.newPage();
    const key = await signUpAndKey(page, server);
    const api = (p: string, body?: unknown) =>
      fetch(`${server.base}${p}`, {
        method: body === undefined ? "GET" : "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const box = await json(await api("/v1/boxes", { spec: { desktop: { features: [] } } }));
    if (box.state !== "ready") throw new Error(`box did not start: ${JSON.stringify(box)}`);
    const batch = async (body: unknown) => {
      const res = await api(`/v1/boxes/${box.id}/screens/0/actions`, body);
      if (res.status !== 200) throw new Error(`batch answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
    };
    const lastSeq = async () => {
      let after = -1;
      let frames = 0;
      for (;;) {
        const page = await json(await api(`/v1/boxes/${box.id}/trace?limit=500&after=${after}`));
        frames += page.entries.filter((e: { event: string }) => e.event === "frame").length;
        if (page.entries.length) after = page.entries[page.entries.length - 1].seq;
        if (page.next === null) return { last: after, frames };
      }
    };

    // The trace: a frame per batch, padded so the frames spread over ~10,000 entries.
    const fillStart = now();
    await batch({ actions: [{ type: "open_url", url: `data:text/html;base64,${Buffer.from(PAGE).toString("base64")}`, target: "current" }, { type: "wait", ms: 500 }, { type: "click", at: { x: 640, y: 500 } }], want: ["frame"] });
    const pad = Math.max(0, Math.floor(ENTRIES / FRAMES) - 2);
    const letters = "abcdefghijklmnopqrstuvwxyz";
    for (let i = 0; i < FRAMES - 1; i++) {
      await batch({
        actions: [{ type: "type", text: letters[i % 26] }, ...Array.from({ length: pad }, () => ({ type: "cursor" }))],
        want: ["frame"],
        settle_ms: 60,
      });
    }
    await new Promise((r) => setTimeout(r, 1000));
    let { last, frames } = await lastSeq();
    while (last + 1 < ENTRIES) {
      const n = Math.min(500, ENTRIES - last - 1);
      await batch({ actions: Array.from({ length: n }, () => ({ type: "cursor" })) });
      ({ last, frames } = await lastSeq());
    }
    console.log(`trace of ${(last + 1).toLocaleString("en-US")} entries and ${frames} frames made in ${((now() - fillStart) / 1000).toFixed(1)} s`);

    // Pages of 500 through /v1 with the bearer token, from the durable store.
    const pages: number[] = [];
    for (let round = 0; round < 21; round++) {
      let after = -1;
      for (;;) {
        const t0 = now();
        const res = await fetch(`${server.base}/v1/boxes/${box.id}/trace?limit=500&after=${after}`, {
          headers: { authorization: `Bearer ${server.token}` },
        });
        const page = await res.json();
        if (round > 0) pages.push(now() - t0);
        if (page.next === null) break;
        after = page.next;
      }
    }
    const p = summarize("GET /v1/boxes/{id}/trace?limit=500 (local, 10k)", pages);
    console.log(`  target p95 ≤ 20 ms: ${p.p95 <= 20 ? "met" : "missed"}`);

    // The page itself: the loader folds the trace into its summary once, then only the new tail.
    const loads: number[] = [];
    for (let i = 0; i < 11; i++) {
      const t0 = now();
      const res = await page.request.get(`${server.base}/boxes/${box.id}/trace?seq=0`);
      await res.body();
      if (res.status() !== 200) throw new Error(`the trace page answered ${res.status()}`);
      const ms = now() - t0;
      if (i === 0) console.log(`trace page HTML, first load (summary of the whole trace)      ${ms.toFixed(1)} ms`);
      else loads.push(ms);
    }
    summarize("trace page HTML, later loads", loads);

    // Scrub: right after the page shows its first frame (nothing fetched yet), back, and again
    // (decoded frames kept); then in a fresh context (empty HTTP cache) after 3 s of rest, in
    // which the page fetches the bytes of the frames around the slider.
    const open = async (p: Page) => {
      await p.goto(`${server.base}/boxes/${box.id}/trace?seq=0`);
      await p.waitForFunction(() => {
        const c = document.querySelector<HTMLCanvasElement>("[data-testid=trace-frame]");
        return !!c && c.dataset.want !== undefined && (c.dataset.want === "" || c.dataset.frame === c.dataset.want);
      }, undefined, { timeout: 30_000 });
    };
    await open(page);
    report("scrub across all frames, cold (3 s, 60 Hz)", await sweep(page, 0, last));
    report("scrub back across all frames (3 s, 60 Hz)", await sweep(page, last, 0));
    report("scrub across all frames again (3 s, 60 Hz)", await sweep(page, 0, last));
    const fresh = await browser.newContext({ viewport: { width: 1440, height: 1000 }, storageState: await context.storageState() });
    const page2 = await fresh.newPage();
    await open(page2);
    await page2.waitForTimeout(3000);
    report("scrub across all frames, 3 s after load", await sweep(page2, 0, last));
  } finally {
    await browser.close();
    await server.stop();
    await removeTestBoxes();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchScrub();
