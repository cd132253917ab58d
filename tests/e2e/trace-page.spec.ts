import { type Page, expect, test } from "@playwright/test";
import { type TestServer, json } from "../support/server";
import { serverForSpec } from "../support/spec-server";

// The console's trace page on a real box: an agent (with a key made on the Keys page) paints
// the screen four colours, a person holds the screen in between; the page lists the entries,
// follows the slider (drag and keys) with the frame, links each entry to its frame, shades the
// takeover, forks from the selected entry, and still works once the box is removed.

let server: TestServer;
serverForSpec((s) => (server = s));

const COLOURS = { red: [220, 30, 30], green: [30, 170, 60], blue: [40, 60, 220], yellow: [230, 210, 40] } as const;
type Colour = keyof typeof COLOURS;

function colourPage(c: Colour): string {
  const [r, g, b] = COLOURS[c];
  const html = `<!doctype html><html><body style="margin:0;height:100vh;background:rgb(${r},${g},${b})"></body></html>`;
  return `data:text/html;base64,${Buffer.from(html).toString("base64")}`;
}

function near(rgb: number[], c: Colour): boolean {
  return COLOURS[c].every((v, i) => Math.abs(v - rgb[i]!) <= 24);
}

/** What the large frame shows: the hash drawn, the hash wanted, and its centre pixel. */
async function shown(page: Page) {
  return page.getByTestId("trace-frame").evaluate((c: HTMLCanvasElement) => {
    const d = c.getContext("2d")!.getImageData(Math.floor(c.width / 2), Math.floor(c.height / 2), 1, 1).data;
    return { frame: c.dataset.frame ?? "", want: c.dataset.want ?? "", rgb: [d[0]!, d[1]!, d[2]!] };
  });
}

/** Waits until the wanted frame is the one drawn, and returns it. */
async function settled(page: Page) {
  await expect.poll(async () => {
    const s = await shown(page);
    return s.want !== "" && s.frame === s.want;
  }).toBe(true);
  return shown(page);
}

test("the trace page: timeline, scrubber, frames, takeover, fork, and a removed box", async ({ page }) => {
  // Sign up, then a key from the Keys page.
  await page.goto(server.base);
  await expect(page).toHaveURL(/\/signup$/);
  await page.getByLabel("Name", { exact: true }).fill("Tess");
  await page.getByLabel("Email").fill("tess@example.com");
  await page.getByLabel("Password", { exact: true }).fill("correct horse battery");
  await page.getByLabel("Confirm password").fill("correct horse battery");
  await page.getByLabel("Workspace name").fill("Traces");
  await page.getByRole("button", { name: "Create account" }).click();
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  await page.getByRole("link", { name: "API keys" }).click();
  await page.getByLabel("Name", { exact: true }).fill("painter");
  await page.getByRole("button", { name: "Create key" }).click();
  const key = (await page.getByTestId("new-key").textContent())!.trim();

  const api = (p: string, init: { method?: string; json?: unknown; headers?: Record<string, string> } = {}) =>
    fetch(`${server.base}${p}`, {
      method: init.method ?? "GET",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers },
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    });

  const box = await json(await api("/v1/boxes", { method: "POST", json: { spec: { desktop: { features: [] } } } }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  const paint = async (c: Colour) => {
    const res = await api(`/v1/boxes/${box.id}/screens/0/actions`, {
      method: "POST",
      json: { actions: [{ type: "open_url", url: colourPage(c), target: "current" }, { type: "wait", ms: 300 }], want: ["frame"], settle_ms: 300 },
    });
    expect(res.status, await res.clone().text()).toBe(200);
  };
  await paint("red");
  await paint("green");
  expect((await api(`/v1/boxes/${box.id}/screens/0/takeover`, { method: "POST", json: {} })).status).toBe(200);
  await new Promise((r) => setTimeout(r, 1500));
  expect((await api(`/v1/boxes/${box.id}/screens/0/takeover`, { method: "DELETE" })).status).toBe(200);
  await paint("blue");
  await paint("yellow");

  // Frames land in the background: wait for all four.
  let entries: any[] = [];
  await expect
    .poll(async () => {
      entries = (await json(await api(`/v1/boxes/${box.id}/trace?limit=500`))).entries;
      return entries.filter((e) => e.event === "frame").length;
    })
    .toBeGreaterThanOrEqual(4);
  const frames = entries.filter((e) => e.event === "frame");
  const started = entries.find((e) => e.event === "takeover_started");
  const ended = entries.find((e) => e.event === "takeover_ended");
  expect(started && ended).toBeTruthy();

  await page.goto(`${server.base}/boxes/${box.id}/trace`);
  await expect(page.getByRole("heading", { name: /Trace of/ })).toBeVisible();
  const rows = page.getByTestId("trace-entry");
  await expect(rows.filter({ hasText: /created/ })).toBeVisible();
  await expect(rows.filter({ hasText: "handed to a person" })).toBeVisible();
  await expect(rows.filter({ hasText: "taken back" })).toBeVisible();
  await expect(rows.filter({ hasText: "screen 0 changed" })).toHaveCount(frames.length);
  await expect(rows.filter({ hasText: "opened a data: URL" }).first()).toBeVisible();
  await expect(page.getByRole("link", { name: "Boxes", exact: true }).first()).toHaveAttribute("href", "/");
  await expect(page.getByRole("link", { name: "Back to the box" })).toHaveAttribute("href", `/boxes/${box.id}`);

  // The takeover is shaded on the slider's track.
  const shade = page.getByTestId("takeover-shade");
  await expect(shade).toHaveCount(1);
  expect((await shade.boundingBox())!.width).toBeGreaterThan(2);

  // The last entry is selected: the last frame (yellow) is shown.
  const slider = page.getByTestId("trace-slider");
  const last = entries[entries.length - 1].seq;
  // The slider says which entry (its number, as the caption and the timeline show it, then its
  // place), when, and what happened there.
  await expect(slider).toHaveAttribute("aria-valuetext", new RegExp(`^entry ${last}, ${entries.length} of ${entries.length}, \\d\\d:\\d\\d:\\d\\d, .+$`));
  let now = await settled(page);
  expect(near(now.rgb, "yellow"), JSON.stringify(now)).toBe(true);
  expect(now.frame).toBe(frames[frames.length - 1].frame);

  // ← on the slider steps one entry back; the frame follows to the latest at or before it.
  await slider.focus();
  const yellowSeq = frames[frames.length - 1].seq;
  for (let s = last; s >= yellowSeq; s--) await page.keyboard.press("ArrowLeft");
  await expect(slider).toHaveValue(String(yellowSeq - 1));
  now = await settled(page);
  expect(now.frame).toBe(frames[frames.length - 2].frame);
  expect(near(now.rgb, "blue"), JSON.stringify(now)).toBe(true);
  await page.keyboard.press("ArrowRight");
  await expect(slider).toHaveValue(String(yellowSeq));
  expect(near((await settled(page)).rgb, "yellow")).toBe(true);
  // The selected row's button (what has the focus when a person is in the timeline) is "current".
  await expect(page.locator(`[data-testid=trace-entry]:has(> button[aria-current=true])`)).toHaveAttribute("data-seq", String(yellowSeq));

  // ←/→ work from anywhere on the page, not only on the slider.
  await page.getByRole("heading", { name: /Trace of/ }).click();
  await page.keyboard.press("ArrowLeft");
  await expect(slider).toHaveValue(String(yellowSeq - 1));
  expect(near((await settled(page)).rgb, "blue")).toBe(true);
  await page.keyboard.press("ArrowRight");
  await expect(slider).toHaveValue(String(yellowSeq));

  // Dragging the thumb to the red frame's entry shows red.
  const red = frames[0];
  const first = entries[0].seq;
  const bb = (await slider.boundingBox())!;
  const xOf = (seq: number) => bb.x + 8 + ((seq - first) / (last - first)) * (bb.width - 16);
  await page.mouse.move(xOf(yellowSeq), bb.y + bb.height / 2);
  await page.mouse.down();
  await page.mouse.move(xOf(red.seq), bb.y + bb.height / 2, { steps: 12 });
  await page.mouse.up();
  await expect(slider).toHaveValue(String(red.seq));
  now = await settled(page);
  expect(now.frame).toBe(red.frame);
  expect(near(now.rgb, "red"), JSON.stringify(now)).toBe(true);
  // The address keeps the entry.
  await expect(page).toHaveURL(new RegExp(`[?&]seq=${red.seq}(&|$)`));

  // Each entry links to its frame: the PNG, by session.
  const link = rows.filter({ hasText: "screen 0 changed" }).first().getByTestId("entry-frame-link");
  const href = (await link.getAttribute("href"))!;
  expect(href).toBe(`/boxes/${box.id}/trace/frames/${red.frame}`);
  const png = await page.request.get(`${server.base}${href}`);
  expect(png.status()).toBe(200);
  expect(png.headers()["content-type"]).toBe("image/png");
  expect(png.headers()["cache-control"]).toBe("private, max-age=31536000, immutable");
  // Without the session, the page's data routes answer 401 (JSON), never the log-in page.
  expect((await fetch(`${server.base}${href}`)).status).toBe(401);
  expect((await fetch(`${server.base}/boxes/${box.id}/trace/entries`)).status).toBe(401);
  const page2 = await page.request.get(`${server.base}/boxes/${box.id}/trace/entries?after=-1&limit=2`);
  expect(await page2.json()).toMatchObject({ entries: [{ seq: first }, { seq: first + 1 }], next: first + 1 });

  // A link to one entry opens the page there; clicking a filmstrip frame selects it.
  await page.goto(`${server.base}/boxes/${box.id}/trace?seq=${frames[1].seq}`);
  await expect(slider).toHaveValue(String(frames[1].seq));
  expect(near((await settled(page)).rgb, "green")).toBe(true);
  await page.locator(`[data-testid=filmstrip-frame][data-seq="${frames[2].seq}"]`).click();
  await expect(slider).toHaveValue(String(frames[2].seq));
  expect(near((await settled(page)).rgb, "blue")).toBe(true);

  // Fork from the green frame's entry: a new box, linked.
  await page.locator(`[data-testid=filmstrip-frame][data-seq="${frames[1].seq}"]`).click();
  await expect(slider).toHaveValue(String(frames[1].seq));
  await page.getByRole("button", { name: "Fork from here" }).click();
  const forkLink = page.getByTestId("fork-link");
  await expect(forkLink).toBeVisible({ timeout: 60_000 });
  // The link names the new box (its name, else the start of its id) and leads to its page.
  const forkId = (await forkLink.getAttribute("href"))!.replace(/^\/boxes\//, "");
  expect(forkId).toMatch(/^box_[0-9a-f]+$/);
  await expect(forkLink).toHaveText(`${forkId.slice(0, 16)}…`);
  // The console queues the fork: its trace answers once the box is no longer `starting` ("A box
  // that is starting or failed refuses other calls with 409", 000).
  await expect.poll(async () => (await json(await api(`/v1/boxes/${forkId}`))).state, { timeout: 120_000 }).not.toBe("starting");
  const forked = await json(await api(`/v1/boxes/${forkId}/trace?limit=10`));
  expect(forked.entries.find((e: any) => e.event === "forked_from")?.data).toMatchObject({ box: box.id, up_to: frames[1].seq });
  await forkLink.click();
  await expect(page).toHaveURL(new RegExp(`/boxes/${forkId}$`));
  const forkPage = await page.request.get(`${server.base}/boxes/${forkId}`);
  expect(forkPage.status()).toBe(200);

  // Removed, the box keeps its trace page.
  const removed = await api(`/v1/boxes/${box.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
  expect(removed.status).toBeLessThan(300);
  await page.goto(`${server.base}/boxes/${box.id}/trace?seq=${frames[0].seq}`);
  await expect(page.getByText("removed — its trace stays")).toBeVisible();
  await expect(rows.filter({ hasText: "handed to a person" })).toBeVisible();
  await expect(page.getByTestId("takeover-shade")).toHaveCount(1);
  expect(near((await settled(page)).rgb, "red")).toBe(true);
  await slider.focus();
  await page.keyboard.press("End");
  await expect(rows.filter({ hasText: "removed" }).last()).toBeVisible();

  await api(`/v1/boxes/${forkId}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
});
