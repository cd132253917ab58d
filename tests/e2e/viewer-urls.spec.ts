import { type Page, expect, test } from "@playwright/test";
import { signUpAndKey } from "../support/browser";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// Seed 002: "Each screen has its own viewer URL", and after stop → resume, "new desktop, new
// viewer URL". In Chromium against a real 2-screen box: each of the box's viewer_urls opens the
// console on that screen (the canvas shows that screen's colour), and after stop → resume an
// old URL says the desktop was restarted and leads to the current one.

let server: TestServer;
let key = "";

test.beforeAll(async () => {
  server = await startServer();
});

test.afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

const asKey = async (path: string, body?: unknown) => {
  const res = await fetch(`${server.base}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const out = await json(res);
  expect(res.status, JSON.stringify(out)).toBe(200);
  return out;
};

const COLOURS = [
  [230, 40, 140],
  [40, 200, 90],
];
const solid = ([r, g, b]: number[]) =>
  `data:text/html;base64,${Buffer.from(`<!doctype html><body style="margin:0;height:100vh;background:rgb(${r},${g},${b})"></body>`).toString("base64")}`;

/** Mean colour of the middle of the noVNC canvas (framebuffer pixels). */
function middleOfCanvas(page: Page): Promise<number[]> {
  return page.evaluate(() => {
    const c = document.querySelector<HTMLCanvasElement>("[data-testid=vnc] canvas");
    if (!c || c.width === 0) return [-1, -1, -1];
    const d = c.getContext("2d")!.getImageData(c.width / 2 - 200, c.height / 2 - 50, 400, 100).data;
    const sum = [0, 0, 0];
    for (let i = 0; i < d.length; i += 4) for (let k = 0; k < 3; k++) sum[k]! += d[i + k]!;
    return sum.map((s) => Math.round(s / (d.length / 4)));
  });
}
const near = (a: number[], b: number[]) => a.every((v, i) => Math.abs(v - b[i]!) <= 16);

test("each screen's viewer URL opens that screen; after stop → resume an old one leads to the new desktop", async ({ page }) => {
  key = await signUpAndKey(page, server, "Ada");
  const box = await asKey("/v1/boxes", { spec: { desktop: { screens: 2 } } });
  expect(box.viewer_urls).toHaveLength(2);
  for (const n of [0, 1]) await asKey(`/v1/boxes/${box.id}/screens/${n}/actions`, { actions: [{ type: "open_url", url: solid(COLOURS[n]!), target: "current" }] });

  for (const n of [0, 1]) {
    await page.goto(box.viewer_urls[n]);
    const vnc = page.getByTestId("vnc");
    await expect(vnc).toHaveAttribute("data-screen", String(n));
    await expect(vnc).toHaveAttribute("data-state", "connected");
    await expect.poll(async () => near(await middleOfCanvas(page), COLOURS[n]!), { timeout: 20_000 }).toBe(true);
  }

  await asKey(`/v1/boxes/${box.id}/stop`, {});
  const resumed = await asKey(`/v1/boxes/${box.id}/resume`, {});
  expect(resumed.viewer_urls[1]).not.toBe(box.viewer_urls[1]);

  await page.goto(box.viewer_urls[1]);
  await expect(page.getByRole("heading", { name: "This desktop was restarted" })).toBeVisible();
  await expect(page.getByTestId("vnc")).toHaveCount(0);
  await page.getByRole("link", { name: "Open the current desktop" }).click();
  const current = new URL(resumed.viewer_urls[1]);
  await expect(page).toHaveURL(`${server.base}${current.pathname}${current.search}`);
  await expect(page.getByTestId("vnc")).toHaveAttribute("data-screen", "1");
  await expect(page.getByTestId("vnc")).toHaveAttribute("data-state", "connected");
});
