import { expect, test } from "@playwright/test";
import { signUpAndKey } from "../support/browser";
import { type TestServer, json } from "../support/server";
import { serverForSpec } from "../support/spec-server";

// A screen recording on the console's trace page (issue 18): an agent records its box while it
// paints the screen red, then green, then blue; on the trace page, an entry inside the recording
// shows the video at that entry's moment (the picture the video shows there is the colour the
// screen had), an entry before it shows none, and the recording downloads.

let server: TestServer;
serverForSpec((s) => (server = s));

const COLOURS = { red: [220, 30, 30], green: [30, 170, 60], blue: [40, 60, 220] } as const;
type Colour = keyof typeof COLOURS;
const colourPage = (c: Colour) => {
  const [r, g, b] = COLOURS[c];
  return `data:text/html;base64,${Buffer.from(`<!doctype html><body style="margin:0;height:100vh;background:rgb(${r},${g},${b})">`).toString("base64")}`;
};
const near = (rgb: number[], c: Colour) => COLOURS[c].every((v, i) => Math.abs(v - rgb[i]!) <= 40);

test("an entry inside a recording shows the video at that moment; the recording downloads", async ({ page }) => {
  const key = await signUpAndKey(page, server, "Rec");
  const api = (p: string, init: { method?: string; json?: unknown } = {}) =>
    fetch(`${server.base}${p}`, {
      method: init.method ?? "GET",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    });
  const box = await json(await api("/v1/boxes", { method: "POST", json: {} }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  const run = async (actions: unknown[]) => {
    const res = await api(`/v1/boxes/${box.id}/screens/0/actions`, { method: "POST", json: { actions } });
    expect(res.status, await res.clone().text()).toBe(200);
    return json(res);
  };
  const paint = (c: Colour) => run([{ type: "open_url", url: colourPage(c), target: "current" }, { type: "wait", ms: 1500 }]);

  await paint("red");
  await run([{ type: "record", what: { do: "start", fps: 10 } }, { type: "wait", ms: 1000 }]);
  await paint("green");
  await paint("blue");
  await run([{ type: "record", what: { do: "stop" } }]);

  const entries = (await json(await api(`/v1/boxes/${box.id}/trace?limit=500`))).entries as any[];
  const opens = entries.filter((e) => e.event === "acted" && e.data.step.type === "open_url");
  const stopped = entries.find((e) => e.event === "recording_stopped");
  expect(stopped?.data.kept, JSON.stringify(entries.map((e) => e.event))).toBe(true);
  // The green page's open_url entry, plus the wait after it: well inside the recording.
  const green = opens[1];
  const waitAfterGreen = entries.find((e) => e.seq === green.seq + 1);

  await page.goto(`${server.base}/boxes/${box.id}/trace?seq=${waitAfterGreen.seq}`);
  const figure = page.getByRole("figure", { name: "Recording" });
  await expect(figure).toBeVisible();
  await expect(figure).toContainText("Recording of screen 0");
  const video = figure.locator("video");
  const expected = (waitAfterGreen.at_ms - stopped.data.started_at_ms) / 1000;
  // The video stands at the entry's moment, and what it shows there is the green page.
  await expect.poll(() => video.evaluate((v: HTMLVideoElement) => v.readyState), { timeout: 15_000 }).toBeGreaterThanOrEqual(2);
  await expect.poll(() => video.evaluate((v: HTMLVideoElement) => v.currentTime)).toBeCloseTo(expected, 0);
  const centre = () =>
    video.evaluate((v: HTMLVideoElement) => {
      const c = document.createElement("canvas");
      c.width = v.videoWidth;
      c.height = v.videoHeight;
      const g = c.getContext("2d")!;
      g.drawImage(v, 0, 0);
      // A quarter across: the middle has the pointer drawn on it (ffmpeg draws it in).
      const d = g.getImageData(Math.floor(c.width / 4), Math.floor(c.height / 2), 1, 1).data;
      return [d[0]!, d[1]!, d[2]!];
    });
  let rgb: number[] = [];
  await expect.poll(async () => near((rgb = await centre()), "green") || `the video shows ${rgb}`, { timeout: 10_000 }).toBe(true);

  // The download link serves the same file the API keeps.
  const link = figure.getByRole("link", { name: "Download the recording" });
  const [download] = await Promise.all([page.waitForEvent("download"), link.click()]);
  const file = await download.createReadStream();
  let bytes = 0;
  for await (const chunk of file) bytes += (chunk as Buffer).length;
  expect(bytes).toBe(stopped.data.bytes);

  // Stepping to an entry before the recording: no video.
  await page.goto(`${server.base}/boxes/${box.id}/trace?seq=${opens[0].seq}`);
  await expect(page.getByRole("heading", { name: /Trace of/ })).toBeVisible();
  await expect(page.getByRole("figure", { name: "Recording" })).toHaveCount(0);
});
