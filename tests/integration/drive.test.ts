import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Page } from "../support/cdp";
import { type TestServer, execIn, json, removeTestBoxes, startServer } from "../support/server";

// Drive a real box through /v1 and check the effects from the page's side (over CDP) or from
// inside the box, never by trusting the batch result alone.

const TEST_PAGE = `<!doctype html><html><body style="margin:0;font:16px sans-serif">
<textarea id="t" style="position:absolute;left:20px;top:20px;width:500px;height:120px"></textarea>
<button id="b" style="position:absolute;left:20px;top:170px;width:200px;height:60px">Click me</button>
<div id="pad" style="position:absolute;left:20px;top:260px;width:600px;height:200px;background:#ddd"></div>
<div id="sc" style="position:absolute;left:700px;top:20px;width:300px;height:300px;overflow:auto">
  <div style="height:6000px;width:300px;background:linear-gradient(#fff,#000)"></div></div>
<script>
window.st = { clicks: 0, dbl: 0, right: 0, downs: [], ups: [], moves: 0, keys: {}, shiftClicks: 0 };
b.addEventListener("click", (e) => { st.clicks++; if (e.shiftKey) st.shiftClicks++; });
b.addEventListener("dblclick", () => st.dbl++);
b.addEventListener("contextmenu", (e) => { e.preventDefault(); st.right++; });
pad.addEventListener("mousedown", (e) => st.downs.push([e.clientX, e.clientY, e.button]));
document.addEventListener("mouseup", (e) => st.ups.push([e.clientX, e.clientY, e.button]));
pad.addEventListener("mousemove", (e) => { if (e.buttons) st.moves++; });
document.addEventListener("keydown", (e) => { st.keys[e.key] = "down"; });
document.addEventListener("keyup", (e) => { st.keys[e.key] = "up"; });
</script></body></html>`;

let server: TestServer;
let box: any;
let page: Page;

const batch = (body: unknown, screen = 0, headers: Record<string, string> = {}) =>
  server.api(`/v1/boxes/${box.id}/screens/${screen}/actions`, { method: "POST", json: body, headers });

async function okBatch(body: unknown) {
  const res = await batch(body);
  const out = await json(res);
  expect(res.status, JSON.stringify(out)).toBe(200);
  return out;
}

beforeAll(async () => {
  server = await startServer();
  const res = await server.api("/v1/boxes", { method: "POST", json: { spec: { desktop: { screens: 2 } } } });
  box = await json(res);
  expect(box.state, JSON.stringify(box)).toBe("ready");
  page = await Page.open(server, box.id);
});

afterAll(async () => {
  page?.close();
  await server?.stop();
  await removeTestBoxes();
});

beforeEach(async () => {
  await page.navigate(`data:text/html;base64,${Buffer.from(TEST_PAGE).toString("base64")}`);
});

/**
 * The page's record once it stops changing: the agent answers when X has taken the input, and
 * Chromium handles its event queue a moment later (much later on a loaded machine).
 */
async function state() {
  let last = "";
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 100));
    const now = JSON.stringify(await page.evaluate("window.st"));
    if (now === last) return JSON.parse(now);
    last = now;
  }
  return JSON.parse(last);
}

describe("input reaches the page", () => {
  it("clicks, right-clicks, double-clicks and shift-clicks", async () => {
    const at = await page.centre("#b");
    const out = await okBatch({
      actions: [
        { type: "click", at },
        { type: "click", at, button: "right" },
        { type: "double_click", at },
        { type: "click", at, held: ["shift"] },
      ],
    });
    expect(out.stopped_at).toBeNull();
    expect(out.results).toHaveLength(4);
    const st = await state();
    expect(st.clicks).toBe(4); // one, two from the double click, and the shift click
    expect(st.dbl).toBe(1);
    expect(st.right).toBe(1);
    expect(st.shiftClicks).toBe(1);
    expect(st.keys.Shift).toBe("up");
  });

  it("types hostile text literally", async () => {
    const text = `$(rm -rf /) \`id\` "quoted" 'single' \\back\nsecond line 中文 日本語 😀 é ß ${"x".repeat(20)}`;
    await okBatch({ actions: [{ type: "click", at: await page.centre("#t") }, { type: "type", text }] });
    expect(await page.evaluate("document.querySelector('#t').value")).toBe(text);
    // Nothing was executed: the box still has its root filesystem.
    expect((await execIn(box.id, ["test", "-d", "/usr/bin"])).code).toBe(0);
  });

  it("types 1,000 characters with delay 0, every one arriving", async () => {
    const text = Array.from({ length: 1000 }, (_, i) => "abcdefghijklmnopqrstuvwxyz0123456789"[i % 36]).join("");
    const out = await okBatch({ actions: [{ type: "click", at: await page.centre("#t") }, { type: "type", text, delay_ms: 0 }] });
    expect(out.stopped_at).toBeNull();
    expect(await page.evaluate("document.querySelector('#t').value")).toBe(text);
  });

  it("presses chords: select all and delete", async () => {
    await okBatch({ actions: [{ type: "click", at: await page.centre("#t") }, { type: "type", text: "doomed" }] });
    await okBatch({ actions: [{ type: "press", chord: "ctrl+a", then: ["BackSpace"] }] });
    expect(await page.evaluate("document.querySelector('#t').value")).toBe("");
  });

  it("drags with the button held between two points, with smooth and human motion", async () => {
    const c = await page.centre("#pad");
    for (const motion of ["instant", "smooth", "human"]) {
      await okBatch({
        actions: [{ type: "drag", from: { x: c.x - 200, y: c.y }, to: { x: c.x + 200, y: c.y + 50 }, motion, seed: 7 }],
      });
    }
    const st = await state();
    expect(st.downs).toHaveLength(3);
    expect(st.ups.length).toBeGreaterThanOrEqual(3);
    expect(st.moves).toBeGreaterThan(3);
    const [dx] = st.downs[0];
    const [ux, uy] = st.ups[st.ups.length - 1];
    expect(ux - dx).toBeGreaterThanOrEqual(390);
    expect(uy - st.downs[0][1]).toBeGreaterThanOrEqual(45);
  });

  it("the same seed makes the same human path", async () => {
    const move = { type: "move", to: { x: 900, y: 600 }, motion: "human", seed: 1234 };
    const start = { type: "move", to: { x: 100, y: 100 } };
    const a = await okBatch({ actions: [start, move] });
    const b = await okBatch({ actions: [start, move] });
    expect(a.results[1].points).toBeDefined();
    expect(a.results[1].points).toEqual(b.results[1].points);
    const c = await okBatch({ actions: [start, { ...move, seed: 99 }] });
    expect(c.results[1].points).not.toEqual(a.results[1].points);
  });

  it("scrolls by notches, positive down", async () => {
    const at = await page.centre("#sc");
    // Chromium animates wheel scrolling: read the position once it stops moving.
    const settled = async () => {
      let last = -1;
      for (;;) {
        await new Promise((r) => setTimeout(r, 150));
        const now = await page.evaluate<number>("document.querySelector('#sc').scrollTop");
        if (now === last) return now;
        last = now;
      }
    };
    await okBatch({ actions: [{ type: "scroll", at, dy: 5 }] });
    const down = await settled();
    expect(down).toBeGreaterThan(0);
    await okBatch({ actions: [{ type: "scroll", at, dy: -2 }] });
    const up = await settled();
    expect(up).toBeLessThan(down);
    expect(up).toBeGreaterThan(0);
  });
});

describe("held keys and buttons", () => {
  it("releases a held key at the end of the batch and says so", async () => {
    const out = await okBatch({ actions: [{ type: "click", at: await page.centre("#t") }, { type: "key_down", key: "shift" }] });
    expect(out.released_keys.join(",").toLowerCase()).toContain("shift");
    expect(out.holding_keys).toEqual([]);
    expect((await state()).keys.Shift).toBe("up");
  });

  it("keeps a key held for hold_ms across batches, then releases it by itself", async () => {
    await okBatch({ actions: [{ type: "click", at: await page.centre("#t") }] });
    const out = await okBatch({ actions: [{ type: "key_down", key: "shift", hold_ms: 1500 }] });
    expect(out.holding_keys).toHaveLength(1);
    expect(out.holding_keys[0].release_at_ms).toBeGreaterThan(Date.now());
    expect((await state()).keys.Shift).toBe("down");
    await new Promise((r) => setTimeout(r, 2200));
    expect((await state()).keys.Shift).toBe("up");
  });

  it("a held mouse button is released at the end of the batch", async () => {
    const c = await page.centre("#pad");
    const out = await okBatch({ actions: [{ type: "mouse_down", at: c }, { type: "move", to: { x: c.x + 50, y: c.y } }] });
    expect(out.released.length).toBe(1);
    const st = await state();
    expect(st.downs).toHaveLength(1);
    expect(st.ups).toHaveLength(1);
  });
});

describe("frames", () => {
  it("answers unchanged for an unchanged screen and a new frame after a change", async () => {
    const first = await okBatch({ actions: [{ type: "move", to: { x: 5, y: 5 } }], want: ["frame", "cursor"] });
    expect(first.frame.png_base64).toBeTruthy();
    expect(Buffer.from(first.frame.png_base64, "base64").subarray(1, 4).toString()).toBe("PNG");
    expect(first.cursor).toMatchObject({ x: 5, y: 5 });
    const same = await okBatch({ actions: [], want: ["frame"], have_frame: first.frame.hash });
    expect(same.frame).toMatchObject({ hash: first.frame.hash, unchanged: true });
    expect(same.frame.png_base64).toBeUndefined();
    await okBatch({ actions: [{ type: "click", at: await page.centre("#t") }, { type: "type", text: "changed" }] });
    const changed = await okBatch({ actions: [], want: ["frame"], have_frame: first.frame.hash, settle_ms: 100 });
    expect(changed.frame.unchanged).toBe(false);
    expect(changed.frame.hash).not.toBe(first.frame.hash);
  });

  it("GET frame with have, region and scale", async () => {
    const base = `/v1/boxes/${box.id}/screens/0/frame`;
    const full = await json(await server.api(base));
    expect(full.width).toBe(1280);
    const again = await json(await server.api(`${base}?have=${full.hash}`));
    expect(again.unchanged).toBe(true);
    const part = await json(await server.api(`${base}?x=0&y=0&width=200&height=100&scale=50`));
    expect([part.width, part.height]).toEqual([100, 50]);
    expect((await server.api(`${base}?scale=401`)).status).toBe(400);
    expect((await server.api(`${base}?x=1`)).status).toBe(400);
  });
});

describe("batches, screens and refusals", () => {
  it("stops at a failing step unless keep_going", async () => {
    const t = await page.centre("#t");
    const stop = await okBatch({
      actions: [{ type: "click", at: t }, { type: "click", at: { x: 5000, y: 5 } }, { type: "type", text: "after" }],
    });
    expect(stop.stopped_at).toBe(1);
    expect(stop.results).toHaveLength(2);
    expect(stop.results[1]).toMatchObject({ ok: false, code: "bad_request" });
    expect(await page.evaluate("document.querySelector('#t').value")).toBe("");
    const go = await okBatch({
      keep_going: true,
      actions: [{ type: "click", at: t }, { type: "click", at: { x: 5000, y: 5 } }, { type: "type", text: "after" }],
    });
    expect(go.results).toHaveLength(3);
    expect(go.results[2].ok).toBe(true);
    expect(await page.evaluate("document.querySelector('#t').value")).toBe("after");
  });

  it("refuses unknown types and fields naming the step, and later steps as unsupported", async () => {
    for (const [actions, code, text] of [
      [[{ type: "move", to: { x: 1, y: 1 } }, { type: "teleport" }], "bad_request", "actions[1]"],
      [[{ type: "click", at: { x: 1, y: 1 }, force: true }], "bad_request", '"force"'],
      [[{ type: "on_page", what: { op: "click", query: "x" } }], "unsupported", "actions[0]"],
      [[{ type: "launch", app: "no-such-app" }], "not_found", "no-such-app"],
    ] as const) {
      const res = await batch({ actions });
      const body = await json(res);
      expect(body.code, JSON.stringify(body)).toBe(code);
      expect(body.message).toContain(text);
    }
    const unknownTop = await json(await batch({ actions: [], colour: 1 }));
    expect(unknownTop.code).toBe("bad_request");
  });

  it("refuses a screen the box does not have", async () => {
    expect((await batch({ actions: [] }, 2)).status).toBe(404);
    expect((await server.api(`/v1/boxes/${box.id}/screens/x/frame`)).status).toBe(400);
  });

  it("serialises batches on one screen and runs different screens side by side", async () => {
    const wait = { actions: [{ type: "wait", ms: 600 }] };
    let t0 = Date.now();
    await Promise.all([okBatch(wait), okBatch(wait)]);
    const same = Date.now() - t0;
    t0 = Date.now();
    await Promise.all([okBatch(wait), batch(wait, 1).then(json)]);
    const apart = Date.now() - t0;
    expect(same).toBeGreaterThanOrEqual(1200);
    expect(apart).toBeLessThan(1100);
  });

  it("replays a batch with the same idempotency-key instead of running it twice", async () => {
    const at = await page.centre("#b");
    const body = { actions: [{ type: "click", at }] };
    await okBatch({ actions: [] });
    const a = await json(await batch(body, 0, { "idempotency-key": "click-once" }));
    const b = await json(await batch(body, 0, { "idempotency-key": "click-once" }));
    expect(b).toEqual(a);
    expect((await state()).clicks).toBe(1);
  });
});

describe("screen, windows and clipboard", () => {
  it("lists windows and the active one, and moves the pointer", async () => {
    const windows = await json(await server.api(`/v1/boxes/${box.id}/screens/0/windows`));
    const list = windows.windows ?? windows;
    expect(list.some((w: any) => /chromium/i.test(w.class))).toBe(true);
    const active = await json(await server.api(`/v1/boxes/${box.id}/screens/0/windows/active`));
    expect(JSON.stringify(active)).toMatch(/chromium/i);
    await okBatch({ actions: [{ type: "move", to: { x: 321, y: 123 } }] });
    expect(await json(await server.api(`/v1/boxes/${box.id}/screens/0/cursor`))).toMatchObject({ x: 321, y: 123 });
  });

  it("sets and reads the clipboard, which pastes into the page", async () => {
    const put = await server.api(`/v1/boxes/${box.id}/screens/0/clipboard`, {
      method: "PUT",
      json: { text: "from the clipboard ✓" },
    });
    expect(put.status).toBe(200);
    const got = await json(await server.api(`/v1/boxes/${box.id}/screens/0/clipboard`));
    expect(got.text).toBe("from the clipboard ✓");
    await okBatch({ actions: [{ type: "click", at: await page.centre("#t") }, { type: "press", chord: "ctrl+v" }] });
    expect(await page.evaluate("document.querySelector('#t').value")).toBe("from the clipboard ✓");
  });

  it("launches a catalog app and waits for its window", async () => {
    const out = await okBatch({ actions: [{ type: "launch", app: "xterm" }, { type: "await_window", what: { class: "xterm", within_ms: 10000 } }] });
    expect(out.stopped_at).toBeNull();
    expect(out.windows.some((w: any) => /xterm/i.test(w.class))).toBe(true);
    const xterm = out.results[1].window;
    const closed = await server.api(`/v1/boxes/${box.id}/screens/0/windows/${xterm.id}`, { method: "DELETE" });
    expect(closed.status).toBe(200);
  });
});

describe("files and commands", () => {
  it("runs a command with argv, and times out", async () => {
    const ok = await json(await server.api(`/v1/boxes/${box.id}/exec`, { method: "POST", json: { argv: ["sh", "-c", "echo out; echo err >&2; exit 3"] } }));
    expect(ok).toMatchObject({ code: 3, stdout: "out\n", stderr: "err\n", timed_out: false });
    const t0 = Date.now();
    const slow = await json(await server.api(`/v1/boxes/${box.id}/exec`, { method: "POST", json: { argv: ["sleep", "30"], timeout_ms: 500 } }));
    expect(slow.timed_out).toBe(true);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect((await server.api(`/v1/boxes/${box.id}/exec`, { method: "POST", json: { argv: [], timeout_ms: 1 } })).status).toBe(400);
    expect((await server.api(`/v1/boxes/${box.id}/exec`, { method: "POST", json: { argv: ["ls"], timeout_ms: 600_001 } })).status).toBe(400);
  });

  it("round-trips a 5 MB binary file byte for byte", async () => {
    const bytes = randomBytes(5 * 1024 * 1024);
    const sha = createHash("sha256").update(bytes).digest("hex");
    const put = await server.api(`/v1/boxes/${box.id}/files`, {
      method: "PUT",
      json: { path: "/tmp/blob.bin", contents_base64: bytes.toString("base64") },
    });
    expect(put.status).toBe(200);
    const inside = await execIn(box.id, ["sha256sum", "/tmp/blob.bin"]);
    expect(inside.out).toContain(sha);
    const got = await json(await server.api(`/v1/boxes/${box.id}/files?path=/tmp/blob.bin`));
    expect(createHash("sha256").update(Buffer.from(got.contents_base64, "base64")).digest("hex")).toBe(sha);
  });

  it("lists, greps and globs, with cut at the limit", async () => {
    for (let i = 0; i < 5; i++) {
      await server.api(`/v1/boxes/${box.id}/files`, {
        method: "PUT",
        json: { path: `/tmp/g/f${i}.txt`, contents_base64: Buffer.from(`needle ${i}\nhay\n`).toString("base64") },
      });
    }
    const list = await json(await server.api(`/v1/boxes/${box.id}/files/list?path=/tmp/g`));
    expect(list.entries.map((e: any) => e.name).sort()).toEqual(["f0.txt", "f1.txt", "f2.txt", "f3.txt", "f4.txt"]);
    const grep = await json(await server.api(`/v1/boxes/${box.id}/files/grep`, { method: "POST", json: { pattern: "needle", path: "/tmp/g", limit: 3 } }));
    expect(grep.matches).toHaveLength(3);
    expect(grep.cut).toBe(true);
    const glob = await json(await server.api(`/v1/boxes/${box.id}/files/glob?pattern=*.txt&path=/tmp/g`));
    expect(glob.paths).toHaveLength(5);
    expect(glob.cut).toBe(false);
    const missing = await server.api(`/v1/boxes/${box.id}/files?path=/tmp/nope`);
    expect(missing.status).toBe(404);
  });
});
