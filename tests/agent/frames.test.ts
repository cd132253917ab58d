// Frames from X GetImage: hashes, `have`, regions, windows, scale, the pointer, wait_still,
// and recording. Pixels are checked by decoding the PNG independently.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import { batch, cleanup, display, decodePng, startAgent, startXterm, startXvfb, until, type Agent } from "./harness";
import { Probe } from "./x-probe";
import { Req } from "../../images/x11/agent/x11-wire";
import { getInputFocus } from "../../images/x11/agent/x11-requests";

const D = display(153);
let agent: Agent;
let probe: Probe;

beforeAll(async () => {
  await startXvfb(D);
  agent = await startAgent({ HOLM_DISPLAY_BASE: String(D), HOLM_RECORDINGS_DIR: fs.mkdtempSync("/tmp/holm-rec-") });
  // A full-screen window of one colour: every pixel is known.
  probe = await Probe.open(D);
});
afterAll(async () => {
  probe?.close();
  await cleanup();
});

async function frame(query = ""): Promise<{ hash: string; unchanged: boolean; png_base64?: string; width: number; height: number }> {
  const r = await agent.call("GET", `/screens/0/frame${query}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

/** Paints a solid rectangle on the probe window (a change the frame must see). */
async function paint(color: number, x: number, y: number, w: number, h: number): Promise<void> {
  const c = probe.conn;
  const gc = c.allocId();
  c.send(new Req(55).u32(gc).u32(probe.window).u32(0x4).u32(color).finish()); // CreateGC, foreground
  c.send(new Req(70).u32(probe.window).u32(gc).i16(x).i16(y).u16(w).u16(h).finish()); // PolyFillRectangle
  c.send(new Req(60).u32(gc).finish()); // FreeGC
  await getInputFocus(c);
}

describe("frames", () => {
  it("captures the whole screen as a PNG with the right pixels", async () => {
    await paint(0xff0000, 100, 100, 50, 40);
    const f = await frame();
    expect(f.unchanged).toBe(false);
    expect(f.hash).toMatch(/^[0-9a-f]{40}$/);
    const img = decodePng(Buffer.from(f.png_base64!, "base64"));
    expect([img.width, img.height]).toEqual([1280, 800]);
    expect(img.rgb(5, 5)).toEqual([0x33, 0x66, 0x99]);
    expect(img.rgb(120, 120)).toEqual([0xff, 0, 0]);
    expect(img.rgb(99, 120)).toEqual([0x33, 0x66, 0x99]);
  });

  it("answers unchanged without an image when `have` is current, and a new hash after a change", async () => {
    const a = await frame();
    const same = await frame(`?have=${a.hash}`);
    expect(same).toEqual({ hash: a.hash, unchanged: true, width: 1280, height: 800 });
    await paint(0x00ff00, 300, 300, 10, 10);
    const b = await frame(`?have=${a.hash}`);
    expect(b.unchanged).toBe(false);
    expect(b.hash).not.toBe(a.hash);
    expect(decodePng(Buffer.from(b.png_base64!, "base64")).rgb(305, 305)).toEqual([0, 0xff, 0]);
  });

  it("answers unchanged, with no image, as long as the screen does not change", async () => {
    // How fast: `npm run bench drive` (unchanged frame); a test only checks what it answers.
    const a = await frame();
    for (let i = 0; i < 20; i++) {
      const r = await agent.call("GET", `/screens/0/frame?have=${a.hash}`);
      expect(r.body).toMatchObject({ hash: a.hash, unchanged: true });
      expect(r.body.png_base64).toBeUndefined();
    }
  });

  // An unchanged answer costs one round trip when nothing was drawn since the last read (the
  // X DAMAGE extension, images/x11/agent/damage.ts); these are the changes it must not miss.
  it("sees a one-pixel change drawn by another client right after an unchanged answer", async () => {
    const a = await frame();
    expect((await frame(`?have=${a.hash}`)).unchanged).toBe(true);
    await paint(0x123456, 640, 400, 1, 1);
    const b = await frame(`?have=${a.hash}`);
    expect(b.unchanged).toBe(false);
    expect(decodePng(Buffer.from(b.png_base64!, "base64")).rgb(640, 400)).toEqual([0x12, 0x34, 0x56]);
    // And back: the same pixels as before give the same hash again.
    await paint(0x336699, 640, 400, 1, 1);
    expect(await frame(`?have=${a.hash}`)).toMatchObject({ hash: a.hash, unchanged: true });
  });

  it("sees a window mapped, moved and unmapped by another client, and a region read between", async () => {
    const a = await frame();
    const c = probe.conn;
    const win = c.allocId();
    // CreateWindow 60×60 at 10,10 with a white background, override-redirect (no window manager here).
    c.send(new Req(1, 0).u32(win).u32(c.setup.root).i16(10).i16(10).u16(60).u16(60).u16(0).u16(1).u32(0).u32(0x2 | 0x200).u32(0xffffff).u32(1).finish());
    c.send(new Req(8).u32(win).finish()); // MapWindow
    await getInputFocus(c);
    const mapped = await until(async () => {
      const f = await frame(`?have=${a.hash}`);
      return f.unchanged ? null : f;
    }, "the mapped window in a frame");
    expect(decodePng(Buffer.from(mapped.png_base64!, "base64")).rgb(30, 30)).toEqual([0xff, 0xff, 0xff]);
    // A region read in between must not hide the move from the next full frame.
    await frame("?x=0&y=0&width=10&height=10");
    c.send(new Req(12).u32(win).u16(0x3).pad(2).u32(500).u32(200).finish()); // ConfigureWindow x, y (onto nothing painted)
    await getInputFocus(c);
    const moved = await frame(`?have=${mapped.hash}`);
    expect(moved.unchanged).toBe(false);
    const img = decodePng(Buffer.from(moved.png_base64!, "base64"));
    expect(img.rgb(30, 30)).toEqual([0x33, 0x66, 0x99]);
    expect(img.rgb(520, 220)).toEqual([0xff, 0xff, 0xff]);
    c.send(new Req(4).u32(win).finish()); // DestroyWindow
    await getInputFocus(c);
    // Where it was, the probe's background comes back: the screen is the first frame again.
    expect(await frame(`?have=${a.hash}`)).toMatchObject({ hash: a.hash, unchanged: true });
  });

  it("captures a region, and scales", async () => {
    const r = await frame("?x=100&y=100&width=50&height=40");
    const img = decodePng(Buffer.from(r.png_base64!, "base64"));
    expect([img.width, img.height]).toEqual([50, 40]);
    expect(img.rgb(0, 0)).toEqual([0xff, 0, 0]);
    const half = await frame("?scale=50");
    expect([half.width, half.height]).toEqual([640, 400]);
    const dimg = decodePng(Buffer.from(half.png_base64!, "base64"));
    expect(dimg.rgb(60, 60)).toEqual([0xff, 0, 0]);
    const big = await frame("?x=100&y=100&width=10&height=10&scale=400");
    expect([big.width, big.height]).toEqual([40, 40]);
    const bad = await agent.call("GET", "/screens/0/frame?x=1270&y=0&width=20&height=20");
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("bad_request");
    const badScale = await agent.call("GET", "/screens/0/frame?scale=0");
    expect(badScale.status).toBe(400);
  });

  it("captures one window by id", async () => {
    startXterm(D, ["-title", "shot", "-geometry", "40x10+200+150", "-bg", "#00ff00", "-e", "sleep", "600"]);
    const w = await until(async () => (await batch(agent, 0, { actions: [] })).windows.find((x: { title: string }) => x.title === "shot"), "xterm");
    const r = await batch(agent, 0, { actions: [{ type: "capture", what: { window: w.id } }] });
    expect(r.results[0]).toMatchObject({ ok: true, width: w.width, height: w.height, unchanged: false });
    const img = decodePng(Buffer.from(r.results[0].png_base64, "base64"));
    expect(img.rgb(w.width - 3, w.height - 3)).toEqual([0, 0xff, 0]);
  });

  it("draws the pointer only when asked", async () => {
    await batch(agent, 0, { actions: [{ type: "move", to: { x: 600, y: 500 } }] });
    const plain = await frame("?x=580&y=480&width=40&height=40");
    const withPointer = await frame("?x=580&y=480&width=40&height=40&pointer=1");
    expect(withPointer.hash).not.toBe(plain.hash);
    const img = decodePng(Buffer.from(withPointer.png_base64!, "base64"));
    let differing = 0;
    for (let y = 0; y < 40; y++) for (let x = 0; x < 40; x++) if (img.rgb(x, y).join() !== "51,102,153") differing++;
    expect(differing).toBeGreaterThan(10);
  });

  it("adds the final frame to a batch, honouring have_frame", async () => {
    const f = await frame();
    const r = await batch(agent, 0, { actions: [{ type: "cursor" }], want: ["frame", "cursor"], have_frame: f.hash });
    expect(r.frame).toEqual({ hash: f.hash, unchanged: true, width: 1280, height: 800 });
    expect(r.cursor).toEqual({ x: 600, y: 500 });
  });

  // A frame deflates again only the bands of rows that changed since the last (png-bands.ts) and
  // reuses the rest. Every pixel of each frame is checked against what was painted, over changes
  // near and far apart, across band edges, between region and pointer reads (other sizes), and
  // painted back to what was there.
  it("brings a frame up to date exactly after changes anywhere, big or small", async () => {
    const W = 1280;
    const H = 800;
    const model = new Uint32Array(W * H).fill(0x336699);
    // A window of its own over the whole screen (override-redirect: mapped on top of the rest).
    const c = probe.conn;
    const win = c.allocId();
    c.send(new Req(1, 0).u32(win).u32(c.setup.root).i16(0).i16(0).u16(W).u16(H).u16(0).u16(1).u32(0).u32(0x2 | 0x200).u32(0x336699).u32(1).finish());
    c.send(new Req(8).u32(win).finish()); // MapWindow
    const draw = async (color: number, x: number, y: number, w: number, h: number) => {
      const gc = c.allocId();
      c.send(new Req(55).u32(gc).u32(win).u32(0x4).u32(color).finish()); // CreateGC, foreground
      c.send(new Req(70).u32(win).u32(gc).i16(x).i16(y).u16(w).u16(h).finish()); // PolyFillRectangle
      c.send(new Req(60).u32(gc).finish()); // FreeGC
      await getInputFocus(c);
      for (let yy = y; yy < y + h; yy++) model.fill(color, yy * W + x, yy * W + x + w);
    };
    const check = async (label: string) => {
      const img = decodePng(Buffer.from((await frame()).png_base64!, "base64"));
      for (let y = 0; y < H; y++) {
        for (let x = 0; x < W; x++) {
          const v = model[y * W + x]!;
          const [r, g, b] = img.rgb(x, y);
          if (r !== v >>> 16 || g !== ((v >>> 8) & 0xff) || b !== (v & 0xff)) {
            throw new Error(`${label}: pixel ${x},${y} is ${[r, g, b]}, painted ${v.toString(16)}`);
          }
        }
      }
    };
    await draw(0x336699, 0, 0, W, H);
    await check("a window over the whole screen");
    await draw(0xff0000, 31, 31, 2, 2); // across a band edge (bands are 32 rows)
    await check("a small change across a band edge");
    await draw(0x00ff00, 0, 0, 5, 5);
    await draw(0x0000ff, 1270, 790, 10, 10); // far apart: one box holds both
    await check("two changes at opposite corners");
    await frame("?x=600&y=300&width=50&height=50"); // a region read between: another capture
    await draw(0xabcdef, 610, 310, 20, 20);
    await check("after a region read");
    await frame("?pointer=1");
    await draw(0x010203, 100, 700, 300, 1);
    await check("after a read with the pointer");
    await draw(0x336699, 0, 0, 5, 5); // painted back as it was
    await draw(0x336699, 31, 31, 2, 2);
    await check("painted back");
    for (let i = 0; i < 5; i++) {
      await draw((i * 0x2f3f4f) & 0xffffff, (i * 211) % 1200, (i * 157) % 760, 40 + i, 30 + i);
      await check(`change ${i}`);
    }
    c.send(new Req(4).u32(win).finish()); // DestroyWindow
    await getInputFocus(c);
  });
});

describe("wait_still", () => {
  it("returns once the screen has been still for settle_ms", async () => {
    const r = await batch(agent, 0, { actions: [{ type: "wait_still", settle_ms: 200, within_ms: 3000 }] });
    expect(r.results[0]).toMatchObject({ ok: true, still: true });
    expect(r.results[0].waited_ms).toBeGreaterThanOrEqual(200);
    expect(r.results[0].waited_ms).toBeLessThan(3000);
  });

  it("times out while the screen keeps changing", async () => {
    let i = 0;
    // A new colour each time: two looks that straddle two paints must still see a change.
    const t = setInterval(() => void paint((++i * 0x0a0b0c) & 0xffffff, 0, 0, 20, 20), 40);
    try {
      // The painter is this test's timer: settle_ms is long enough that a busy machine pausing
      // it (the whole agent suite runs at once) does not look like a still screen.
      const r = await batch(agent, 0, { actions: [{ type: "wait_still", settle_ms: 600, within_ms: 1500 }] });
      expect(r.results[0]).toMatchObject({ ok: false, code: "timeout" });
      expect(r.stopped_at).toBe(0);
    } finally {
      clearInterval(t);
    }
  });
});

describe("record", () => {
  it("records the screen with ffmpeg to a file in the box", async () => {
    const start = await batch(agent, 0, { actions: [{ type: "record", what: { do: "start", fps: 10 } }] });
    expect(start.results[0]).toMatchObject({ ok: true, recording: true, fps: 10 });
    const status = await agent.call("GET", "/screens/0/recording");
    expect(status.body).toMatchObject({ recording: true, path: start.results[0].path });
    const again = await batch(agent, 0, { actions: [{ type: "record", what: { do: "start" } }] });
    expect(again.results[0]).toMatchObject({ ok: false, code: "failed" });
    await new Promise((r) => setTimeout(r, 1200));
    const stop = await agent.call("DELETE", "/screens/0/recording");
    expect(stop.status).toBe(200);
    expect(stop.body).toMatchObject({ recording: false, path: start.results[0].path });
    expect(stop.body.bytes).toBeGreaterThan(1000);
    expect(fs.statSync(stop.body.path).size).toBe(stop.body.bytes);
    const after = await batch(agent, 0, { actions: [{ type: "record", what: { do: "stop" } }] });
    expect(after.results[0]).toMatchObject({ ok: false, code: "failed" });
  });
});
