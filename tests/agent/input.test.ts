// Pointer and key input, checked by an independent X client (Probe) and xdotool.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { batch, cleanup, display, pointerAt, startAgent, startXvfb, type Agent } from "./harness";
import { Probe, STATE_CONTROL, STATE_SHIFT } from "./x-probe";

const D = display(151);
let agent: Agent;
let probe: Probe;

beforeAll(async () => {
  await startXvfb(D);
  agent = await startAgent({ HOLM_DISPLAY_BASE: String(D), HOLM_SCREENS: "1" });
  probe = await Probe.open(D);
});
afterAll(async () => {
  probe?.close();
  await cleanup();
});

const presses = (evs: { type: string; detail: number }[], type: string) => evs.filter((e) => e.type === type).map((e) => e.detail);

describe("pointer", () => {
  it("moves instantly and reports where it is", async () => {
    const r = await batch(agent, 0, { actions: [{ type: "move", to: { x: 321, y: 123 } }, { type: "cursor" }], want: ["cursor"] });
    expect(r.results[0]).toMatchObject({ ok: true, at: { x: 321, y: 123 } });
    expect(r.results[1]).toMatchObject({ ok: true, x: 321, y: 123 });
    expect(r.cursor).toEqual({ x: 321, y: 123 });
    expect(pointerAt(D)).toEqual({ x: 321, y: 123 });
  });

  it("clicks each button at a point, with held modifiers", async () => {
    await probe.take();
    const r = await batch(agent, 0, {
      actions: [
        { type: "click", at: { x: 10, y: 20 } },
        { type: "click", at: { x: 30, y: 40 }, button: "right" },
        { type: "click", button: "middle" },
        { type: "click", at: { x: 50, y: 60 }, held: ["shift", "ctrl"] },
      ],
    });
    expect(r.stopped_at).toBeNull();
    expect(r.results.every((x: { ok: boolean }) => x.ok)).toBe(true);
    const evs = await probe.take();
    const bp = evs.filter((e) => e.type === "button_press");
    expect(bp.map((e) => [e.detail, e.x, e.y])).toEqual([[1, 10, 20], [3, 30, 40], [2, 30, 40], [1, 50, 60]]);
    expect(presses(evs, "button_release")).toEqual([1, 3, 2, 1]);
    expect(bp[3].state & (STATE_SHIFT | STATE_CONTROL)).toBe(STATE_SHIFT | STATE_CONTROL);
    expect(bp[0].state & (STATE_SHIFT | STATE_CONTROL)).toBe(0);
    // The modifiers were let go afterwards.
    expect(evs.filter((e) => e.type === "key_press").length).toBe(2);
    expect(evs.filter((e) => e.type === "key_release").length).toBe(2);
    expect(r.released).toEqual([]);
    expect(r.holding).toEqual([]);
  });

  it("double-clicks", async () => {
    await probe.take();
    await batch(agent, 0, { actions: [{ type: "double_click", at: { x: 200, y: 200 } }] });
    const evs = await probe.take();
    expect(presses(evs, "button_press")).toEqual([1, 1]);
    const [a, b] = evs.filter((e) => e.type === "button_press");
    // Within any toolkit's double-click interval (fluxbox 250 ms, GTK 400, Chromium 500).
    expect(b.time - a.time).toBeLessThan(250);
  });

  it("scrolls in notches: positive dy is down (button 5), negative dx is left (button 6)", async () => {
    await probe.take();
    await batch(agent, 0, { actions: [{ type: "scroll", at: { x: 400, y: 400 }, dy: 3, dx: -2 }] });
    expect(presses(await probe.take(), "button_press")).toEqual([5, 5, 5, 6, 6]);
  });

  it("drags from one point to another with motion in between", async () => {
    await probe.take();
    await batch(agent, 0, { actions: [{ type: "drag", from: { x: 100, y: 100 }, to: { x: 300, y: 200 } }] });
    const evs = await probe.take();
    const press = evs.find((e) => e.type === "button_press");
    const release = evs.find((e) => e.type === "button_release");
    expect(press).toMatchObject({ detail: 1, x: 100, y: 100 });
    expect(release).toMatchObject({ detail: 1, x: 300, y: 200 });
    const between = evs.filter((e) => e.type === "motion" && e.time >= (press?.time ?? 0) && e.time <= (release?.time ?? 0));
    expect(between.length).toBeGreaterThanOrEqual(2);
  });

  it("follows a path with the button down", async () => {
    await probe.take();
    const through = [{ x: 50, y: 50 }, { x: 150, y: 50 }, { x: 150, y: 150 }];
    await batch(agent, 0, { actions: [{ type: "path", through, motion: "smooth" }] });
    const evs = await probe.take();
    expect(evs.find((e) => e.type === "button_press")).toMatchObject({ x: 50, y: 50 });
    expect(evs.find((e) => e.type === "button_release")).toMatchObject({ x: 150, y: 150 });
    const dragged = evs.filter((e) => e.type === "motion" && e.state & 0x100);
    expect(dragged.some((e) => e.x === 150 && e.y === 50)).toBe(true);
  });

  it("refuses a point outside the screen, naming the step, and stops there", async () => {
    const r = await batch(agent, 0, {
      actions: [{ type: "move", to: { x: 5, y: 5 } }, { type: "click", at: { x: 1280, y: 10 } }, { type: "move", to: { x: 9, y: 9 } }],
    });
    expect(r.stopped_at).toBe(1);
    expect(r.results).toHaveLength(2);
    expect(r.results[1]).toMatchObject({ ok: false, code: "bad_request" });
    expect(r.results[1].message).toMatch(/step 1 \(click\).*outside the 1280×800 screen/);
    expect(pointerAt(D)).toEqual({ x: 5, y: 5 });
  });

  it("keeps going past a refused step when asked", async () => {
    const r = await batch(agent, 0, {
      keep_going: true,
      actions: [{ type: "click", at: { x: 1280, y: 10 } }, { type: "move", to: { x: 77, y: 88 } }],
    });
    expect(r.stopped_at).toBeNull();
    expect(r.results.map((x: { ok: boolean }) => x.ok)).toEqual([false, true]);
    expect(pointerAt(D)).toEqual({ x: 77, y: 88 });
  });
});

describe("motion", () => {
  async function recorded(motion: string, seed?: number): Promise<Array<[number, number]>> {
    await batch(agent, 0, { actions: [{ type: "move", to: { x: 100, y: 600 } }] });
    await probe.take();
    const r = await batch(agent, 0, { actions: [{ type: "move", to: { x: 900, y: 150 }, motion, seed }] });
    expect(r.results[0].at).toEqual({ x: 900, y: 150 });
    return (await probe.take()).filter((e) => e.type === "motion").map((e) => [e.x, e.y]);
  }

  it("human motion with the same seed takes the same curved path; another seed another", async () => {
    const a = await recorded("human", 42);
    const b = await recorded("human", 42);
    const c = await recorded("human", 43);
    expect(a.length).toBeGreaterThan(8);
    expect(a).toEqual(b);
    expect(c).not.toEqual(a);
    // Curved: some point is well off the straight line from (100,600) to (900,150).
    const off = (p: [number, number]) => Math.abs((150 - 600) * p[0] - (900 - 100) * p[1] + 900 * 600 - 150 * 100) / Math.hypot(800, 450);
    expect(Math.max(...a.map(off))).toBeGreaterThan(10);
  });

  it("smooth motion is a straight line of several points; instant is one warp", async () => {
    const s = await recorded("smooth");
    expect(s.length).toBeGreaterThanOrEqual(4);
    for (const p of s) {
      const t = (p[0] - 100) / 800;
      expect(Math.abs(600 + t * (150 - 600) - p[1])).toBeLessThanOrEqual(2);
    }
    expect(await recorded("instant")).toEqual([[900, 150]]);
  });
});

describe("holding", () => {
  it("mouse_down without hold_ms is let go at the end of the batch and reported", async () => {
    await probe.take();
    const r = await batch(agent, 0, { actions: [{ type: "mouse_down", at: { x: 20, y: 20 } }] });
    expect(r.released).toEqual(["left"]);
    expect(r.holding).toEqual([]);
    const evs = await probe.take();
    expect(presses(evs, "button_press")).toEqual([1]);
    expect(presses(evs, "button_release")).toEqual([1]);
  });

  it("mouse_down with hold_ms outlives the batch and is let go by the agent's timer", async () => {
    await probe.take();
    const t0 = Date.now();
    const r = await batch(agent, 0, { actions: [{ type: "mouse_down", at: { x: 30, y: 30 }, hold_ms: 400 }] });
    expect(r.released).toEqual([]);
    expect(r.holding).toHaveLength(1);
    expect(r.holding[0].button).toBe("left");
    expect(r.holding[0].release_at_ms).toBeGreaterThanOrEqual(t0 + 350);
    const early = await probe.take(100);
    expect(presses(early, "button_press")).toEqual([1]);
    expect(presses(early, "button_release")).toEqual([]);
    const late = await probe.take(500);
    expect(presses(late, "button_release")).toEqual([1]);
  });

  it("mouse_up lets go of a held button before its timer", async () => {
    await batch(agent, 0, { actions: [{ type: "mouse_down", at: { x: 30, y: 30 }, hold_ms: 5000 }] });
    await probe.take();
    const r = await batch(agent, 0, { actions: [{ type: "mouse_up", at: { x: 60, y: 60 } }] });
    expect(r.results[0]).toMatchObject({ ok: true, was_held: true });
    expect(r.holding).toEqual([]);
    const evs = await probe.take();
    expect(evs.find((e) => e.type === "button_release")).toMatchObject({ detail: 1, x: 60, y: 60 });
  });

  it("key_down with hold_ms holds a key across batches; /release lets go of everything now", async () => {
    await probe.take();
    const r = await batch(agent, 0, {
      actions: [{ type: "key_down", key: "shift", hold_ms: 30_000 }, { type: "mouse_down", at: { x: 40, y: 40 }, hold_ms: 30_000 }],
    });
    expect(r.holding_keys.map((k: { key: string }) => k.key)).toEqual(["shift"]);
    expect(r.holding.map((k: { button: string }) => k.button)).toEqual(["left"]);
    // A click in a later batch still sees shift down.
    await batch(agent, 0, { actions: [{ type: "click", at: { x: 41, y: 41 }, button: "right" }] });
    const mid = await probe.take();
    const right = mid.find((e) => e.type === "button_press" && e.detail === 3);
    expect((right?.state ?? 0) & STATE_SHIFT).toBe(STATE_SHIFT);
    const rel = await agent.call("POST", "/screens/0/release");
    expect(rel.status).toBe(200);
    expect(rel.body).toEqual({ released: ["left"], released_keys: ["shift"] });
    const evs = await probe.take();
    expect(presses(evs, "button_release")).toEqual([1]);
    expect(evs.filter((e) => e.type === "key_release")).toHaveLength(1);
    const after = await batch(agent, 0, { actions: [] });
    expect(after.holding).toEqual([]);
    expect(after.holding_keys).toEqual([]);
  });

  it("a restarted agent lets go of what the previous one left down", async () => {
    await batch(agent, 0, { actions: [{ type: "key_down", key: "ctrl", hold_ms: 60_000 }, { type: "mouse_down", at: { x: 5, y: 5 }, hold_ms: 60_000 }] });
    agent.proc.kill("SIGKILL");
    await probe.take();
    agent = await startAgent({ HOLM_DISPLAY_BASE: String(D), HOLM_SCREENS: "1" });
    const evs = await probe.take(300);
    expect(presses(evs, "button_release")).toEqual([1]);
    expect(evs.filter((e) => e.type === "key_release")).toHaveLength(1);
  });
});

describe("keys", () => {
  it("presses chords with their modifiers, then further chords", async () => {
    await probe.focus();
    await probe.take();
    const r = await batch(agent, 0, { actions: [{ type: "press", chord: "ctrl+shift+t", then: ["Return", "alt+F4"] }] });
    expect(r.results[0]).toMatchObject({ ok: true, pressed: ["ctrl+shift+t", "Return", "alt+F4"] });
    const evs = await probe.take();
    const kp = evs.filter((e) => e.type === "key_press");
    const syms = await Promise.all(kp.map((e) => probe.keysymOf(e.detail)));
    // ctrl, shift, t | Return | alt, F4
    expect(syms).toEqual([0xffe3, 0xffe1, 0x74, 0xff0d, 0xffe9, 0xffc1]);
    expect(kp[2].state & (STATE_CONTROL | STATE_SHIFT)).toBe(STATE_CONTROL | STATE_SHIFT);
    expect(kp[3].state & (STATE_CONTROL | STATE_SHIFT)).toBe(0);
    expect(evs.filter((e) => e.type === "key_release")).toHaveLength(6);
  });

  it("refuses an unknown key name before pressing anything", async () => {
    await probe.take();
    // The step's schema (app/protocol/keys.ts, as the server's) refuses the whole batch.
    const r = await agent.call("POST", "/screens/0/batch", { actions: [{ type: "key_down", key: "a" }, { type: "press", chord: ["a", "ctrl+nosuchkey"] }] });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "bad_request" });
    expect((r.body as { message: string }).message).toMatch(/nosuchkey/);
    expect((await probe.take()).filter((e) => e.type === "key_press")).toHaveLength(0);
  });

  it("key_down without hold_ms is let go at the end of the batch", async () => {
    await probe.take();
    const r = await batch(agent, 0, { actions: [{ type: "key_down", key: "a" }] });
    expect(r.released_keys).toEqual(["a"]);
    const evs = await probe.take();
    expect(evs.map((e) => e.type)).toEqual(["key_press", "key_release"]);
  });

});
