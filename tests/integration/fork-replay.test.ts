import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// holm's `replay` on GET /v1/boxes/{id} of a fork (issue 14): the replay's progress while it
// runs and its report after, for an agent polling a 202 fork; the seed's fork answer
// ({box, replay: {attempted, ok, stopped_at, truncated, skipped}}) is unchanged. On real boxes,
// with the durable store, so the report outlives a restart (it is a `replay_ended` entry of the
// fork's trace).

const SEED_REPORT = ["attempted", "ok", "skipped", "stopped_at", "truncated"];
const HOLM_REPLAY = ["attempted", "done", "ok", "skipped", "stopped_at", "total", "truncated"];

let server: TestServer;
let source: any;
const made: string[] = [];

const del = (id: string) => server.api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const page = (n: number) =>
  `data:text/html;base64,${Buffer.from(`<!doctype html><body style="margin:0;height:100vh;background:hsl(${n * 90},60%,60%)">`).toString("base64")}`;

async function batch(body: unknown) {
  const res = await server.api(`/v1/boxes/${source.id}/screens/0/actions`, { method: "POST", json: body });
  expect(res.status, await res.clone().text()).toBe(200);
}

async function getBox(id: string) {
  const res = await server.api(`/v1/boxes/${id}`);
  expect(res.status).toBe(200);
  return json(res);
}

/** The desktop the source runs: X11, or Wayland when fork-replay.wayland.test.ts imports this suite. */
const DESKTOP = (globalThis as { HOLM_FORK_REPLAY_DESKTOP?: string }).HOLM_FORK_REPLAY_DESKTOP ?? "x11";

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
  const desktop = { features: [], ...(DESKTOP === "wayland" && { server: "wayland" }) };
  const res = await server.api("/v1/boxes", { method: "POST", json: { spec: { desktop } } });
  source = await json(res);
  expect(source.state, JSON.stringify(source)).toBe("ready");
  expect(source.spec.desktop.server).toBe(DESKTOP);
  made.push(source.id);
  // A write (skipped by a fork), then four batches a second apart (the replay waits as long).
  await batch({ actions: [{ type: "write_file", what: { path: "/tmp/marker.txt", contents_base64: "aGk=" } }] });
  for (let i = 0; i < 4; i++) {
    if (i) await sleep(1000);
    await batch({ actions: [{ type: "open_url", url: page(i), target: "current" }, { type: "wait", ms: 100 }] });
  }
});

afterAll(async () => {
  for (const id of made) await del(id).catch(() => {});
  await server?.stop();
  await removeTestBoxes();
});

describe("a fork's replay on /v1", () => {
  let forkId: string;
  let report: any;

  it("POST …/fork answers the seed's {box, replay} and nothing more; GET …/{fork} adds holm's `replay`", async () => {
    const res = await server.api(`/v1/boxes/${source.id}/fork`, { method: "POST", json: {} });
    const body = await json(res);
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(Object.keys(body).sort()).toEqual(["box", "replay"]);
    expect(Object.keys(body.replay).sort()).toEqual(SEED_REPORT);
    expect(body.box).not.toHaveProperty("replay");
    report = body.replay;
    forkId = body.box.id;
    made.push(forkId);
    expect(report).toMatchObject({ attempted: 8, ok: 8, stopped_at: null, truncated: false });
    expect(report.skipped).toEqual([expect.objectContaining({ kind: "file_written", why: "the trace records that /tmp/marker.txt was written, not what went into it" })]);

    const got = await getBox(forkId);
    expect(Object.keys(got.replay).sort()).toEqual(HOLM_REPLAY);
    expect(got.replay).toEqual({ ...report, total: 8, done: true });
    // The box's own fields are the same as in the fork's answer and on a box that is no fork.
    const { replay: _, devtools_url: __, ...rest } = got;
    const { devtools_url: ___, ...plain } = await getBox(source.id);
    expect(Object.keys(rest).sort()).toEqual(Object.keys(plain).sort());
  });

  it("a box that is not a fork has no `replay`, and listings never do", async () => {
    expect(await getBox(source.id)).not.toHaveProperty("replay");
    const list = await json(await server.api("/v1/boxes"));
    for (const b of list.boxes) expect(b).not.toHaveProperty("replay");
  });

  it("the report is a replay_ended entry of the fork's trace, so it outlives a restart", async () => {
    const trace = await json(await server.api(`/v1/boxes/${forkId}/trace?limit=500`));
    const from = trace.entries.find((e: any) => e.event === "forked_from");
    expect(from.data).toMatchObject({ box: source.id, up_to: null, steps: 8 });
    const ended = trace.entries.find((e: any) => e.event === "replay_ended");
    expect(ended).toMatchObject({ actor: "server", data: { ...report, total: 8 } });
    expect(ended.seq).toBeGreaterThan(from.seq);

    // The next server starts with nothing in memory and reads it from the trace, queueing jobs.
    await server.stop();
    server.env.HOLM_SERVER_JOBS = "queue";
    server = await server.restart();
    await expect.poll(async () => (await getBox(forkId)).state, { timeout: 60_000 }).toBe("ready");
    expect((await getBox(forkId)).replay).toEqual({ ...report, total: 8, done: true });
  });

  it("queued, the fork answers 202 with the seed's empty report, and GET follows the replay to its end", async () => {
    await expect.poll(async () => (await getBox(source.id)).state, { timeout: 60_000 }).toBe("ready");
    const res = await server.api(`/v1/boxes/${source.id}/fork`, { method: "POST", json: {} });
    const body = await json(res);
    expect(res.status, JSON.stringify(body)).toBe(202);
    made.push(body.box.id);
    expect(body.replay).toEqual({ attempted: 0, ok: 0, stopped_at: null, truncated: false, skipped: [] });
    expect(body.box.state).toBe("starting");

    const seen: any[] = [];
    const deadline = Date.now() + 120_000;
    for (;;) {
      const { replay } = await getBox(body.box.id);
      expect(Object.keys(replay).sort()).toEqual(HOLM_REPLAY);
      if (!seen.length || JSON.stringify(seen.at(-1)) !== JSON.stringify(replay)) seen.push(replay);
      if (replay.done || Date.now() > deadline) break;
      await sleep(100);
    }
    // Before the end: not done, the total known, attempted counting up (a batch at a time).
    expect(seen[0]).toMatchObject({ total: 8, attempted: 0, ok: 0, done: false });
    expect(seen.some((r) => !r.done && r.attempted > 0 && r.attempted < 8), JSON.stringify(seen)).toBe(true);
    const attempted = seen.map((r) => r.attempted);
    expect(attempted).toEqual([...attempted].sort((a, b) => a - b));
    expect(seen.at(-1)).toEqual({ total: 8, attempted: 8, ok: 8, done: true, stopped_at: null, truncated: false, skipped: report.skipped });
  });
});
