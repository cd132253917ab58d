import { createHash } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { Page } from "../support/cdp";
import { serverWithOneBox } from "../support/one-box";
import { type TestServer, json } from "../support/server";

// The trace's frame samples after input batches (recorder.server.ts sampleSoon), on a real box:
// a batch that ends while the sample of the one before is being captured gets a frame of its
// own, so the trace never ends on the screen before the last batch; and a stream of batches is
// sampled about once a second, not raced by a capture of the whole screen every 150 ms.

// Each press gives the top half a new colour: every batch changes the screen.
const PAGE = `<!doctype html><html><body style="margin:0">
<div id="box" style="position:fixed;left:0;top:0;width:100vw;height:50vh;background:#3a6"></div>
<script>let n = 0; box.addEventListener("mousedown", () => { n++; box.style.background = "hsl(" + (n * 47) % 360 + ",60%,50%)"; });</script>
</body></html>`;

let server: TestServer;
let box: any;
serverWithOneBox((s, b) => ((server = s), (box = b)));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function frames(): Promise<string[]> {
  const all: any[] = [];
  let after: number | undefined;
  for (;;) {
    const res = await server.api(`/v1/boxes/${box.id}/trace?limit=500${after !== undefined ? `&after=${after}` : ""}`);
    expect(res.status).toBe(200);
    const page = await json(res);
    all.push(...page.entries);
    if (page.next === null) return all.filter((e) => e.event === "frame").map((e) => e.frame);
    after = page.next;
  }
}

const lastFrame = async () => (await frames()).at(-1);

async function screenHash(): Promise<string> {
  const now = await json(await server.api(`/v1/boxes/${box.id}/screens/0/frame`));
  return createHash("sha256").update(Buffer.from(now.png_base64, "base64")).digest("hex");
}

async function click(): Promise<void> {
  const res = await server.api(`/v1/boxes/${box.id}/screens/0/actions`, {
    method: "POST",
    json: { actions: [{ type: "click", at: { x: 640, y: 200 } }] },
  });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

describe("trace frame samples", () => {
  beforeAll(async () => {
    const page = await Page.open(server, box.id);
    try {
      await page.navigate(`data:text/html;base64,${Buffer.from(PAGE).toString("base64")}`);
    } finally {
      page.close();
    }
    await sleep(1000);
  });

  it("a batch that ends while the last one's sample is captured gets a frame of its own", async () => {
    // The sample of a batch begins 150 ms after it; the second click lands at or just after that,
    // while the box reads and encodes the screen. Each round ends once every sample has landed.
    const stale: number[] = [];
    for (let offset = 140; offset <= 260; offset += 10) {
      await click();
      await sleep(offset);
      await click();
      await sleep(800);
      if ((await lastFrame()) !== (await screenHash())) stale.push(offset);
    }
    // Before: the trace ended on the screen before the second click for some offsets.
    expect(stale, "offsets whose trace ended before the second click").toEqual([]);
  }, 120_000);

  it("samples a stream of batches about once a second, and the screen as the stream left it", async () => {
    await sleep(500);
    const before = (await frames()).length;
    let batches = 0;
    const t0 = Date.now();
    while (Date.now() - t0 < 1500) {
      await click();
      batches++;
    }
    const during = (await frames()).length - before;
    expect(batches).toBeGreaterThan(20);
    // Before: a capture every ~150 ms of the stream (7 frames in 1.5 s, 89 batches), each of
    // which the batches meeting it waited behind.
    expect(during, `${during} frames sampled during ${batches} batches`).toBeLessThanOrEqual(2);
    await sleep(1200);
    expect(await lastFrame()).toBe(await screenHash());
  }, 60_000);
});
