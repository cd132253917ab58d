import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Page } from "../support/cdp";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { openStore } from "../support/store";

// Forks on real boxes (seed 001, "Fork a box"): a recorded batch is replayed as the batch it was,
// and the fork's placement is the source's, less its browser profile, with the given fields over it.

// A drawing pad: each press on it starts a stroke, the first release after it ends the stroke.
const PAD = `<!doctype html><html><body style="margin:0">
<div id="pad" style="position:absolute;left:20px;top:20px;width:700px;height:400px;background:#ddd;user-select:none"></div>
<script>
window.strokes = []; let cur = null;
document.addEventListener("dragstart", (e) => e.preventDefault());
pad.addEventListener("mousedown", (e) => { cur = { from: [e.clientX, e.clientY], to: null, moves: 0 }; strokes.push(cur); });
document.addEventListener("mousemove", (e) => { if (cur && e.buttons & 1) cur.moves++; });
document.addEventListener("mouseup", (e) => { if (cur) { cur.to = [e.clientX, e.clientY]; cur = null; } });
</script></body></html>`;
const PAD_URL = `data:text/html;base64,${Buffer.from(PAD).toString("base64")}`;

interface Stroke {
  from: [number, number];
  to: [number, number] | null;
  moves: number;
}

let server: TestServer;
let source: any;
/** The desktop the suite's source box runs (its forks take its spec): X11, or Wayland when fork.wayland.test.ts imports it. */
const DESKTOP = (globalThis as { HOLM_FORK_DESKTOP?: string }).HOLM_FORK_DESKTOP ?? "x11";
/** The drag, in screen coordinates: press at `a`, move to `b`, release at `b`. */
let a: { x: number; y: number };
let b: { x: number; y: number };

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

async function trace(id: string): Promise<any[]> {
  const res = await server.api(`/v1/boxes/${id}/trace?limit=500`);
  expect(res.status).toBe(200);
  return (await json(res)).entries;
}

async function actions(id: string, body: unknown) {
  const res = await server.api(`/v1/boxes/${id}/screens/0/actions`, { method: "POST", json: body });
  const out = await json(res);
  expect(res.status, JSON.stringify(out)).toBe(200);
  expect(out.stopped_at).toBeNull();
  return out;
}

/** The pad's strokes once one has ended (polled for at most 15 s: Chromium handles input late). */
async function strokes(id: string): Promise<Stroke[]> {
  const page = await Page.open(server, id);
  try {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const got = await page.evaluate<Stroke[]>("window.strokes");
      if (got?.some((s) => s.to) || Date.now() > deadline) return got;
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    page.close();
  }
}

async function fork(id: string, body: unknown) {
  const res = await server.api(`/v1/boxes/${id}/fork`, { method: "POST", json: body });
  return { status: res.status, body: await json(res) };
}

/** The acted entries as [step type, batch id, index in the batch]. */
const batching = (entries: any[]) =>
  entries.filter((e) => e.event === "acted").map((e) => [e.data.step.type, e.data.batch?.id, e.data.batch?.index]);

describe("fork replays a batch as the batch it was", () => {
  it("records each step as its own acted entry, marked with its batch and the batch's settle_ms and want", async () => {
    const res = await server.api("/v1/boxes", { method: "POST", json: { spec: { desktop: { features: [], ...(DESKTOP === "wayland" && { server: "wayland" }) } }, placement: { idle_timeout_secs: 900 } } });
    source = await json(res);
    expect(source.state, JSON.stringify(source)).toBe("ready");
    await actions(source.id, { actions: [{ type: "open_url", url: PAD_URL, target: "current" }, { type: "wait", ms: 300 }] });
    const page = await Page.open(server, source.id);
    const c = await page.centre("#pad");
    page.close();
    a = { x: c.x - 200, y: c.y - 50 };
    b = { x: c.x + 200, y: c.y + 80 };
    // The button is held across the move only because the three are one batch.
    await actions(source.id, {
      actions: [
        { type: "mouse_down", at: a },
        { type: "move", to: b, motion: "smooth", seed: 3 },
        { type: "mouse_up", at: b },
      ],
      settle_ms: 200,
      want: ["frame"],
    });
    const drawn = await strokes(source.id);
    expect(drawn).toHaveLength(1);
    expect(drawn[0]!.moves).toBeGreaterThan(0);

    const acted = (await trace(source.id)).filter((e) => e.event === "acted");
    // "Each step of a batch becomes its own acted entry" (001).
    expect(acted.map((e) => e.data.step.type)).toEqual(["open_url", "wait", "mouse_down", "move", "mouse_up"]);
    const [open, wait, down, move, up] = acted.map((e) => e.data.batch);
    expect(wait.id).toBe(open.id);
    expect(down.id).not.toBe(open.id);
    expect([move.id, up.id]).toEqual([down.id, down.id]);
    expect([down.index, move.index, up.index]).toEqual([0, 1, 2]);
    for (const m of [down, move, up]) expect(m).toMatchObject({ settle_ms: 200, want: ["frame"] });
    expect(open.settle_ms).toBeUndefined();
    expect(down.began_ms).toBeLessThanOrEqual(acted[2].at_ms);
  });

  it('"Does the recorded steps again, in order" (001): the drag held across its batch comes out the same in the fork', async () => {
    const { status, body } = await fork(source.id, {});
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.replay).toMatchObject({ attempted: 5, ok: 5, stopped_at: null, truncated: false });
    expect(body.box.spec.desktop.server, "the fork runs the source's desktop").toBe(DESKTOP);
    const drawn = await strokes(body.box.id);
    const want = await strokes(source.id);
    expect(drawn, "the fork's pad").toHaveLength(1);
    // The same stroke: it ends where the source's did (client coordinates, same window).
    expect(drawn[0]!.from).toEqual(want[0]!.from);
    expect(drawn[0]!.to).toEqual(want[0]!.to);
    expect(drawn[0]!.to![0] - drawn[0]!.from[0]).toBe(b.x - a.x);
    expect(drawn[0]!.moves).toBeGreaterThan(0);
    // The fork sent the batches as they were, so its own trace groups the steps the same way.
    const mine = await trace(body.box.id);
    const groups = batching(mine);
    expect(groups.map(([type, , index]) => [type, index])).toEqual([
      ["open_url", 0],
      ["wait", 1],
      ["mouse_down", 0],
      ["move", 1],
      ["mouse_up", 2],
    ]);
    expect(new Set(groups.map(([, id]) => id)).size).toBe(2);
    expect(mine.filter((e) => e.event === "acted").slice(2).every((e) => e.data.batch.settle_ms === 200)).toBe(true);
    await server.api(`/v1/boxes/${body.box.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
  });
});

describe("a trace written by an older server", () => {
  it("(made here: its box_created placement names a profile, a runtime and a key this server does not know; no batch marks)", async () => {
    await server.api(`/v1/boxes/${source.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    await server.stop();
    const db = openStore(server);
    try {
      const rows = db.prepare("SELECT seq, event, data_json FROM trace_entry WHERE box_id = ?").all(source.id) as any[];
      const update = db.prepare("UPDATE trace_entry SET data_json = ? WHERE box_id = ? AND seq = ?");
      for (const r of rows) {
        const data = JSON.parse(r.data_json ?? "null");
        if (r.event === "box_created") {
          data.placement = { ...data.placement, runtime: "elsewhere", profile: "work", gpu: "any" };
        } else if (r.event === "acted") {
          delete data.batch;
        } else continue;
        update.run(JSON.stringify(data), source.id, r.seq);
      }
    } finally {
      db.close();
    }
    server = await server.restart();
    const created = (await trace(source.id))[0];
    expect(created.data.placement).toMatchObject({ runtime: "elsewhere", profile: "work", idle_timeout_secs: 900 });
  });

  it('"Creates a new box on the same runtime, unless your placement names another" (001); placement "Default: the original\'s" (000)', async () => {
    // Without a placement, and with one that names no runtime, the fork goes to the recorded runtime.
    for (const body of [{}, { placement: { expires_after_secs: 1800 } }]) {
      const res = await fork(source.id, body);
      expect(res.status, JSON.stringify(res.body)).toBe(404);
      expect(res.body).toMatchObject({ code: "not_found" });
      expect(res.body.message).toContain("elsewhere");
    }
  });

  it('"The new box does not get the source\'s browser profile" (001); a fork placement naming one is refused', async () => {
    const refused = await fork(source.id, { placement: { runtime: "docker", profile: "work" } });
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.code).toBe("unsupported");

    const { status, body } = await fork(source.id, { placement: { runtime: "docker", expires_after_secs: 1800 } });
    expect(status, JSON.stringify(body)).toBe(200);
    // The given fields over the source's: its idle timeout stays; no profile, no unknown key.
    expect(body.box.placement).toMatchObject({ runtime: "docker", expires_after_secs: 1800, idle_timeout_secs: 900 });
    expect(body.box.placement).not.toHaveProperty("profile");
    expect(body.box.placement).not.toHaveProperty("gpu");
    const mine = await trace(body.box.id);
    expect(mine[0].event).toBe("box_created");
    expect(mine[0].data.placement).not.toHaveProperty("profile");

    // With no batch marks the steps went one by one, as before: five one-step batches.
    expect(body.replay).toMatchObject({ attempted: 5, ok: 5, stopped_at: null });
    const groups = batching(mine);
    expect(new Set(groups.map(([, id]) => id)).size).toBe(5);
    // Which is why batches are marked: one by one, the button is let go when mouse_down's own
    // batch ends, so the drag is lost. (Not asserted from the page: where Chromium puts that
    // mouseup depends on its timing — a loaded CI run saw it at the next batch's pointer, [206,
    // 182] for a press at [170, 170].)
    await server.api(`/v1/boxes/${body.box.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
  });
});
