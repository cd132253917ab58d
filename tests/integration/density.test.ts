import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, docker, json, removeTestBoxes, startServer } from "../support/server";

// Density (ADR 0016), with real boxes. A burst of creates larger than the server may hold: the
// ones it can hold start and become ready, the rest are refused up front with 503 `unavailable`
// (retryable, the seed's error body) — none is launched and lost, none ends `failed`. A machine
// without the memory for a box refuses it the same way. And an idle box that nobody watches
// stays quiet: its whole cgroup, and x11vnc in it, use almost no CPU.

const MAX_LIVE = 3;
const BURST = 8;

let server: TestServer;
const made = new Set<string>();

beforeAll(async () => {
  server = await startServer({ HOLM_MAX_LIVE_BOXES: String(MAX_LIVE), HOLM_LAUNCH_CONCURRENCY: "2" });
});

afterAll(async () => {
  for (const id of made) {
    await server.api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } }).catch(() => undefined);
  }
  await server?.stop();
  await removeTestBoxes();
});

/** Host CPU time (ns) of a container's cgroup (cgroup v1, as on this machine). */
const cgroupCpuNs = (id: string) => Number(fs.readFileSync(`/sys/fs/cgroup/cpuacct/docker/${id}/cpuacct.usage`, "utf8"));

/** CPU ticks (1/100 s) of the process named `comm` in the container. */
function ticksOf(id: string, comm: string): number {
  const pids = fs.readFileSync(`/sys/fs/cgroup/cpuacct/docker/${id}/cgroup.procs`, "utf8").trim().split("\n");
  for (const p of pids) {
    const stat = fs.readFileSync(`/proc/${p}/stat`, "utf8");
    if (stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) !== comm) continue;
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(f[11]) + Number(f[12]);
  }
  throw new Error(`no ${comm} in the box`);
}

describe("density", () => {
  let ready: string[] = [];

  it(`${BURST} creates at once with room for ${MAX_LIVE}: ${MAX_LIVE} ready, the rest 503 unavailable (retryable), none failed or lost`, async () => {
    const answers = await Promise.all(
      Array.from({ length: BURST }, async () => {
        const res = await server.api("/v1/boxes", { method: "POST", json: {} });
        const body = await json(res);
        if (body.id) made.add(body.id);
        return { status: res.status, body };
      }),
    );
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 503);
    expect(ok.length, JSON.stringify(answers.map((a) => [a.status, a.body.state ?? a.body.message]))).toBe(MAX_LIVE);
    expect(refused.length).toBe(BURST - MAX_LIVE);
    for (const a of ok) expect(a.body.state, a.body.reason).toBe("ready");
    for (const a of refused) {
      expect(Object.keys(a.body).sort()).toEqual(["code", "message", "retryable"]);
      expect(a.body).toMatchObject({ code: "unavailable", retryable: true });
      expect(a.body.message).toMatch(/most live boxes \(3 of HOLM_MAX_LIVE_BOXES=3\)/);
    }
    ready = ok.map((a) => a.body.id);
    // Nothing was launched for the refused ones, and nothing failed: the list holds the ready three.
    const list = await json(await server.api("/v1/boxes"));
    expect(list.boxes.map((b: any) => b.state).sort()).toEqual(["ready", "ready", "ready"]);
    for (const id of ready) expect((await docker.getContainer(`holm-${id}`).inspect()).State.Running).toBe(true);
  }, 150_000);

  it("once a box is removed, the next create is admitted again", async () => {
    const gone = ready.pop()!;
    await server.api(`/v1/boxes/${gone}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    made.delete(gone);
    const res = await server.api("/v1/boxes", { method: "POST", json: {} });
    const box = await json(res);
    made.add(box.id);
    expect(res.status, JSON.stringify(box)).toBe(200);
    expect(box.state).toBe("ready");
    ready.push(box.id);
  }, 90_000);

  it("an idle box nobody watches stays quiet: under 1.5 % of a core for the whole box, x11vnc at most 2 ticks in 5 s", async () => {
    // The box has been up a while (the create above); no viewer, thumbnail or call meanwhile.
    // A new Chromium keeps working for seconds after ready (profile, fonts, first paint): the
    // box is measured once it is 20 s old, as an idle box is. CI failed once measuring a box
    // 5–8 s old beside the end-to-end suite (1.66 %).
    const info = await docker.getContainer(`holm-${ready[0]}`).inspect();
    const age = Date.now() - Date.parse(info.State.StartedAt);
    await new Promise((r) => setTimeout(r, Math.max(2000, 20_000 - age)));
    // Five windows of 5 s, judged by their median: a window is 500 ticks of the whole
    // machine, and an unlucky wake-up or two of Chromium's background work is not idleness lost
    // (with three, one run beside the other suites read 0.3, 2.0 and 1.6 %).
    const windows: { pct: number; vnc: number }[] = [];
    for (let i = 0; i < 5; i++) {
      const c0 = cgroupCpuNs(info.Id);
      const v0 = ticksOf(info.Id, "x11vnc");
      const t0 = performance.now();
      await new Promise((r) => setTimeout(r, 5000));
      const secs = (performance.now() - t0) / 1000;
      windows.push({ pct: ((cgroupCpuNs(info.Id) - c0) / 1e9 / secs) * 100, vnc: ticksOf(info.Id, "x11vnc") - v0 });
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[2];
    // Before ADR 0016: 2.3 % (a Docker healthcheck exec every 5 s and the omnibox popup's renderer).
    expect(median(windows.map((w) => w.pct)), JSON.stringify(windows)).toBeLessThan(1.5);
    // x11vnc with no client sleeps 200 ms between looks for one (0.1 % of a core); a poll of the
    // screen (20 ms, what it does for a client) would be several ticks in every window.
    expect(median(windows.map((w) => w.vnc)), JSON.stringify(windows)).toBeLessThanOrEqual(2);
  }, 90_000);
});

describe("memory admission", () => {
  it("a machine without the memory for another box answers 503 unavailable (retryable) and launches nothing", async () => {
    const tight = await startServer({ HOLM_HOST_MEMORY_RESERVE: "100000g" });
    try {
      const res = await tight.api("/v1/boxes", { method: "POST", json: {} });
      const body = await json(res);
      expect(res.status).toBe(503);
      expect(body).toMatchObject({ code: "unavailable", retryable: true });
      expect(body.message).toMatch(/no memory for another box/);
      const list = await json(await tight.api("/v1/boxes"));
      expect(list.boxes).toEqual([]);
    } finally {
      await tight.stop();
    }
  }, 60_000);
});
