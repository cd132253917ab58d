import { CHROMIUM_ARGS, CHROMIUM_PATH, signUpAndKey } from "../tests/support/browser";
import { type Page, chromium } from "playwright-core";
import { type TestServer, json, removeTestBoxes, startServer } from "../tests/support/server";
import { summarize } from "./stats";

// The console's box page in Chromium: from the moment the viewer asks for a ticket
// (performance mark `holm:ticket:<box>:<screen>`, set by app/components/vnc-viewer.tsx just
// before it loads noVNC and fetches /boxes/{id}/ticket; `holm:connected:…` marks noVNC's
// `connect`, after the RFB handshake) to the first framebuffer pixels drawn
// in noVNC's canvas (the first sample of the canvas, at animation-frame rate, that is not
// black: a fresh canvas is transparent black, the box's desktop is not). Also from navigation
// start, which adds the page load and hydration. Each run is a fresh page load on one box.

const RUNS = Number(process.env.BENCH_RUNS ?? 10);
const WARMUP = 2;

// Installed before the page's own scripts: resolves with the time of the first non-black frame.
const FIRST_FRAME = `
window.__holmFirstFrame = new Promise((resolve) => {
  const small = document.createElement("canvas");
  small.width = 32;
  small.height = 20;
  let g;
  const tick = () => {
    const c = document.querySelector("[data-testid=vnc] canvas");
    if (c && c.width > 0) {
      g ??= small.getContext("2d", { willReadFrequently: true });
      g.clearRect(0, 0, 32, 20);
      g.drawImage(c, 0, 0, 32, 20);
      const d = g.getImageData(0, 0, 32, 20).data;
      for (let i = 0; i < d.length; i += 4) {
        if (d[i] + d[i + 1] + d[i + 2] > 30) return resolve(performance.now());
      }
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
});`;


export async function benchViewerAttach() {
  const server = await startServer();
  const browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: CHROMIUM_ARGS,
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    const page = await context.newPage();
    const key = await signUpAndKey(page, server);
    const res = await fetch(`${server.base}/v1/boxes`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: "{}",
    });
    const box = await json(res);
    if (box.state !== "ready") throw new Error(`box did not start: ${JSON.stringify(box)}`);
    await context.addInitScript(FIRST_FRAME);

    const fromTicket: number[] = [];
    const fromNavigation: number[] = [];
    const ticketAnswered: number[] = [];
    const rfbConnected: number[] = [];
    for (let i = 0; i < WARMUP + RUNS; i++) {
      await page.goto(`${server.base}/boxes/${box.id}`);
      const t = await page.evaluate(async (mark) => {
        const drawn = await Promise.race([
          (window as unknown as { __holmFirstFrame: Promise<number> }).__holmFirstFrame,
          new Promise<number>((_, reject) => setTimeout(() => reject(new Error("no frame within 15 s")), 15_000)),
        ]);
        const asked = performance.getEntriesByName(`holm:ticket:${mark}`)[0]?.startTime;
        const connected = performance.getEntriesByName(`holm:connected:${mark}`)[0]?.startTime;
        if (asked === undefined || connected === undefined) throw new Error(`no marks for ${mark}`);
        const ticket = performance.getEntriesByType("resource").find((e) => e.name.includes("/ticket?")) as PerformanceResourceTiming | undefined;
        return {
          fromTicket: drawn - asked,
          fromNavigation: drawn,
          ticketAnswered: (ticket?.responseEnd ?? asked) - asked,
          rfbConnected: connected - asked,
        };
      }, `${box.id}:0`);
      if (i < WARMUP) continue;
      fromTicket.push(t.fromTicket);
      fromNavigation.push(t.fromNavigation);
      ticketAnswered.push(t.ticketAnswered);
      rfbConnected.push(t.rfbConnected);
    }
    summarize("  of which: ticket → ticket answered", ticketAnswered);
    summarize("  of which: ticket → RFB handshake done", rfbConnected);
    const s = summarize("box page: ticket → first frame drawn", fromTicket);
    summarize("box page: navigation → first frame drawn", fromNavigation);
    console.log(`  target median ≤ 500 ms (${s.median <= 500 ? "met" : "missed"})`);
  } finally {
    await browser.close();
    await server.stop();
    await removeTestBoxes();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchViewerAttach();
