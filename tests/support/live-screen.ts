import { type Page, type Request, expect } from "@playwright/test";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { decodePng } from "./png";
import type { TestServer } from "./server";

// What the live-view tests measure on a box's page: where the screen is and how big, every frame
// painted over it, clicks through its canvas, and whether a page came back from the back/forward
// cache.

/**
 * Opens `url`, and opens it again (up to `tries` loads in all) when Chromium cancelled any of the
 * document's requests with net::ERR_NETWORK_CHANGED. Chromium cancels what is in flight when a
 * network interface or address comes or goes, and the Docker engine adds and removes them as the
 * run's other tests start and remove boxes; a page that lost a module or its stylesheet that way
 * stays half there (never hydrated, or a screen with no height), which is how the live view's
 * tests failed now and then (CI run 45 showed the cancelled requests). The console's pages now
 * reload themselves when a stylesheet or script is cut (app/components/network-cut-guard.tsx);
 * this also covers the document's own request, and says in the run's log when it loads again.
 */
export async function gotoWhole(page: Page, url: string, tries = 3) {
  for (let attempt = 1; ; attempt++) {
    const cancelled: string[] = [];
    const failed = (r: Request) => {
      if (r.failure()?.errorText === "net::ERR_NETWORK_CHANGED") cancelled.push(r.url());
    };
    page.on("requestfailed", failed);
    try {
      // `load`: the document's scripts and stylesheets have all arrived or failed.
      await page.goto(url);
    } catch (err) {
      if (!cancelled.length || attempt >= tries) throw err;
    } finally {
      page.off("requestfailed", failed);
    }
    // The last load stands as it is: the test's own waits say what it lacks.
    if (!cancelled.length || attempt >= tries) return;
    // Said in the run's log, so a reload is never silent.
    console.warn(`${new URL(url).pathname}: Chromium cut ${cancelled.length} request(s) with net::ERR_NETWORK_CHANGED (load ${attempt}); loading it again`);
  }
}

/** How often this document was restored from the back/forward cache (once it can be asked). */
export async function restoredCount(page: Page): Promise<number> {
  let n = -1;
  await expect
    .poll(async () => (n = await page.evaluate(() => ((window as any).__restored as number | undefined) ?? 0).catch(() => -1)))
    .toBeGreaterThanOrEqual(0);
  return n;
}

/** Clicks the page at a point of the box's screen, through the scaled canvas. */
export async function clickBoxAt(page: Page, at: { x: number; y: number }) {
  const box = await page.locator("[data-testid=vnc] canvas").evaluate((c: HTMLCanvasElement) => {
    const r = c.getBoundingClientRect();
    return { left: r.left, top: r.top, sx: r.width / c.width, sy: r.height / c.height };
  });
  await page.mouse.click(box.left + at.x * box.sx, box.top + at.y * box.sy);
}

/** The sizes that say how the screen is laid out. */
export const layout = (page: Page) =>
  page.evaluate(() => {
    const c = document.querySelector("[data-testid=vnc] canvas")!.getBoundingClientRect();
    const frame = document.querySelector<HTMLElement>("[data-testid=screen-frame]")!;
    const area = document.querySelector<HTMLElement>("[data-testid=screen-area]")!;
    return {
      w: c.width,
      h: c.height,
      // What the screen's column offers (the frame sits in it, with its padding of 6 px a side).
      avail: frame.parentElement!.clientWidth - 12,
      area: { w: area.clientWidth, h: area.clientHeight, sw: area.scrollWidth, sh: area.scrollHeight },
      vw: innerWidth,
      vh: innerHeight,
      pageScrollsSideways: document.documentElement.scrollWidth > innerWidth,
    };
  });

/**
 * Every frame the page paints (CDP screencast) while `during` runs: for each, the share of the
 * screen's area that is dark (no channel above 60), sampled every 8 px.
 */
export async function paintedFrames(page: Page, viewer: ViewerRecord, during: () => Promise<void>) {
  // The screen's area once it has one: right after "connected" it can still be unsized, and a
  // CI run measured an empty area (every frame's dark share NaN).
  await waitForScreen(page, viewer, 10_000);
  // And painted: the page's first connection shows the screen's dark frame until its first update
  // paints (there is no frame to keep yet). Recording from "connected" caught that once (CI run
  // 61: the first of 15 frames all dark, before the take-over's click).
  await waitForPaint(page, viewer, 10_000);
  const area = await page.getByTestId("vnc").boundingBox();
  const session = await page.context().newCDPSession(page);
  const frames: { png: Buffer }[] = [];
  session.on("Page.screencastFrame", (f: any) => {
    frames.push({ png: Buffer.from(f.data, "base64") });
    void session.send("Page.screencastFrameAck", { sessionId: f.sessionId }).catch(() => undefined);
  });
  const vw = page.viewportSize()!.width;
  await session.send("Page.startScreencast", { format: "png", maxWidth: vw, maxHeight: page.viewportSize()!.height, everyNthFrame: 1 });
  await during();
  await page.waitForTimeout(500);
  await session.send("Page.stopScreencast");
  await session.detach();
  return frames.map(({ png }) => {
    const img = decodePng(png);
    const k = img.width / vw;
    let dark = 0;
    let n = 0;
    for (let y = area!.y + 4; y < area!.y + area!.height - 4; y += 8) {
      for (let x = area!.x + 4; x < area!.x + area!.width - 4; x += 8) {
        const [r, g, b] = img.rgb(Math.floor(x * k), Math.floor(y * k));
        if (Math.max(r, g, b) < 60) dark++;
        n++;
      }
    }
    return dark / n;
  });
}

/**
 * Keeps what a box page's viewer went through, for a test that finds its screen missing: every
 * data-state of the viewer with its time, failed and slow requests (and which are still pending),
 * console errors and WebSocket closes. Call before the page's first goto.
 */
export async function recordViewer(page: Page, server: Pick<TestServer, "logs" | "pid" | "base">): Promise<ViewerRecord> {
  const serverLog = server.logs;
  const events: string[] = [];
  const pending = new Map<Request, number>();
  const t0 = Date.now();
  const at = () => `+${Date.now() - t0} ms`;
  const name = (r: Request) => `${r.method()} ${r.url().replace(/ticket=[^&]+/, "ticket=…")}`;
  page.on("request", (r) => pending.set(r, Date.now()));
  page.on("requestfinished", (r) => {
    const took = Date.now() - (pending.get(r) ?? Date.now());
    pending.delete(r);
    if (took > 1000) events.push(`${at()} slow request: ${name(r)} took ${took} ms`);
  });
  page.on("requestfailed", (r) => {
    pending.delete(r);
    events.push(`${at()} request failed: ${name(r)} ${r.failure()?.errorText}`);
  });
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") events.push(`${at()} console ${m.type()}: ${m.text().slice(0, 300)}`);
  });
  page.on("pageerror", (e) => events.push(`${at()} page error: ${e.message.slice(0, 300)}`));
  page.on("crash", () => events.push(`${at()} the page crashed`));
  const browser = page.context().browser();
  const gone = () => events.push(`${at()} the browser went away`);
  browser?.on("disconnected", gone);
  page.once("close", () => browser?.off("disconnected", gone));
  page.on("websocket", (ws) => {
    const url = ws.url().replace(/ticket=[^&]+/, "ticket=…");
    events.push(`${at()} websocket ${url}`);
    ws.on("socketerror", (e) => events.push(`${at()} websocket error ${url}: ${e}`));
    ws.on("close", () => events.push(`${at()} websocket closed ${url}`));
  });
  await page.addInitScript(() => {
    const w = window as unknown as { __vncStates: string[] };
    w.__vncStates = [];
    const seen = () => {
      const el = document.querySelector<HTMLElement>("[data-testid=vnc]");
      const s = el ? `${el.dataset.state ?? "-"}/${el.dataset.mode ?? "-"}` : "no viewer";
      if (w.__vncStates.at(-1)?.endsWith(` ${s}`)) return;
      w.__vncStates.push(`${Math.round(performance.now())} ms ${s}`);
    };
    new MutationObserver(seen).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-state", "data-mode"] });
  });
  const stillPending = () => [...pending].map(([r, since]) => `${name(r)} for ${Date.now() - since} ms`);
  return { events, stillPending, serverLog, logFrom: serverLog().length, serverHealth: () => serverHealth(server) };
}

export interface ViewerRecord {
  events: string[];
  /** Requests the page made that have neither finished nor failed, and for how long. */
  stillPending: () => string[];
  serverLog: () => string;
  /** Where the server's output stood when the page began. */
  logFrom: number;
  /** The server process's open files against its limit, and its listening socket's queue. */
  serverHealth: () => string;
}

/**
 * What would keep a browser's new connections from the server while a test's pooled ones still
 * work: the server out of file descriptors, or a full accept queue.
 */
function serverHealth(server: Pick<TestServer, "pid" | "base">): string {
  const out: string[] = [];
  try {
    const limit = /Max open files\s+(\d+)/.exec(fs.readFileSync(`/proc/${server.pid}/limits`, "utf8"))?.[1];
    out.push(`open files ${fs.readdirSync(`/proc/${server.pid}/fd`).length} of ${limit}`);
  } catch (e) {
    out.push(`open files unknown: ${(e as Error).message}`);
  }
  const port = new URL(server.base).port;
  try {
    const listen = execFileSync("ss", ["-Hltn", `sport = :${port}`], { encoding: "utf8" }).trim();
    const states = execFileSync("ss", ["-Htan", `( sport = :${port} or dport = :${port} )`], { encoding: "utf8" })
      .split("\n")
      .filter(Boolean)
      .map((l) => l.split(/\s+/)[0]);
    const count = new Map<string, number>();
    for (const st of states) count.set(st!, (count.get(st!) ?? 0) + 1);
    out.push(`listening: ${listen || "no socket"}`, `connections: ${JSON.stringify(Object.fromEntries(count))}`);
  } catch (e) {
    out.push(`sockets unknown: ${(e as Error).message}`);
  }
  return out.join("; ");
}

/** Waits until the viewer says `state` ("connected"); failing, says what it went through (`recordViewer`). */
export async function waitForViewerState(page: Page, rec: ViewerRecord, state: string, timeout = 30_000) {
  await waitFor(page, rec, `the viewer was not ${state}`, timeout, () =>
    page.evaluate((s) => document.querySelector<HTMLElement>("[data-testid=vnc]")?.dataset.state === s, state),
  );
}

/**
 * Waits until the viewer's element and its canvas have a size (noVNC sizes the canvas at the VNC
 * server's ServerInit); failing, says what the viewer went through (`recordViewer`).
 */
export async function waitForScreen(page: Page, rec: ViewerRecord, timeout = 30_000) {
  await waitFor(page, rec, "the screen had no size", timeout, () =>
    page.evaluate(() => {
      const vnc = document.querySelectorAll("[data-testid=vnc]");
      const c = vnc[0]?.querySelector("canvas")?.getBoundingClientRect();
      const v = vnc[0]?.getBoundingClientRect();
      return vnc.length === 1 && !!c && !!v && c.width > 0 && v.height > 0;
    }),
  );
}

/** Until the screen's canvas has been drawn on: opaque at its centre and near its four corners. */
export async function waitForPaint(page: Page, rec: ViewerRecord, timeout = 30_000) {
  await waitFor(page, rec, "the screen was never painted", timeout, () =>
    page.evaluate(() => {
      const c = document.querySelector<HTMLCanvasElement>("[data-testid=vnc] canvas");
      const ctx = c && c.width > 0 && c.height > 0 ? c.getContext("2d") : null;
      if (!c || !ctx) return false;
      return [
        [0.5, 0.5],
        [0.02, 0.02],
        [0.98, 0.02],
        [0.02, 0.98],
        [0.98, 0.98],
      ].every(([x, y]) => ctx.getImageData(Math.floor(x! * (c.width - 1)), Math.floor(y! * (c.height - 1)), 1, 1).data[3]! > 0);
    }),
  );
}

async function waitFor(page: Page, rec: ViewerRecord, failure: string, timeout: number, done: () => Promise<boolean>) {
  const deadline = Date.now() + timeout;
  for (;;) {
    if (await done().catch(() => false)) return;
    if (Date.now() > deadline) break;
    await page.waitForTimeout(250);
  }
  throw new Error(`${failure} after ${timeout / 1000} s\n${await describeViewer(page, rec)}`);
}

/** The page's viewer as the test saw it: its states, the layout around it, its requests and the server's lines. */
async function describeViewer(page: Page, { events, stillPending, serverLog, logFrom, serverHealth }: ViewerRecord): Promise<string> {
  const dom = await page
    .evaluate(() => {
      const rect = (sel: string) =>
        [...document.querySelectorAll<HTMLElement>(sel)].map((el) => {
          const r = el.getBoundingClientRect();
          return `${Math.round(r.left)},${Math.round(r.top)} ${Math.round(r.width)}x${Math.round(r.height)}${el.hidden ? " hidden" : ""}`;
        });
      return {
        url: location.pathname,
        states: (window as unknown as { __vncStates?: string[] }).__vncStates,
        vnc: rect("[data-testid=vnc]"),
        area: rect("[data-testid=screen-area]"),
        frame: rect("[data-testid=screen-frame]"),
        canvases: [...document.querySelectorAll("canvas")].map((c) => {
          const r = c.getBoundingClientRect();
          return `${c.closest("[data-testid]")?.getAttribute("data-testid")}: ${c.width}x${c.height}, ${r.width}x${r.height} on the page`;
        }),
        status: document.querySelector("[data-testid=viewer-status]")?.textContent ?? null,
        frameText: document.querySelector("[data-testid=screen-frame]")?.textContent?.slice(0, 200) ?? null,
        fullscreen: document.fullscreenElement?.getAttribute("data-testid") ?? null,
        viewport: `${innerWidth}x${innerHeight}`,
        now: Math.round(performance.now()),
      };
    })
    .catch((e: Error) => ({ error: e.message }));
  // The server's lines since the page began that concern the viewer, the ticket, the box page or
  // a failure, and any request it took over a second to answer.
  const lines = serverLog()
    .slice(logFrom)
    .split("\n")
    .filter((l) => /viewer|ticket|socket|"level":(40|50|60)|"route":"\/boxes\/:id"|"ms":[0-9]{4,}/.test(l))
    .slice(-30)
    .map((l) => l.replace(/ticket=[^&" ]+/g, "ticket=…").slice(0, 400));
  return (
    `the page: ${JSON.stringify(dom)}\nits events:\n  ${events.join("\n  ")}\nits requests still pending:\n  ${stillPending().join("\n  ")}\n` +
    `the server: ${serverHealth()}\nthe server logged:\n  ${lines.join("\n  ")}`
  );
}
