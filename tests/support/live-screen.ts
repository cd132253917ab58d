import { type Page, expect } from "@playwright/test";
import { decodePng } from "./png";

// What the live-view tests measure on a box's page: where the screen is and how big, every frame
// painted over it, clicks through its canvas, and whether a page came back from the back/forward
// cache.

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
export async function paintedFrames(page: Page, during: () => Promise<void>) {
  // The screen's area once it has one: right after "connected" it can still be unsized, and a
  // CI run measured an empty area (every frame's dark share NaN).
  await expect.poll(async () => (await page.getByTestId("vnc").boundingBox())?.height ?? 0, { timeout: 10_000 }).toBeGreaterThan(100);
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
