import fs from "node:fs";
import { docker, json, removeTestBoxes, startServer, type TestServer } from "../tests/support/server";
import { now, summarize } from "./stats";

// How many idle default boxes one machine holds (ADR 0016): launches them through /v1, 4 at a
// time, until their memory reaches a budget (or a count), then reports boxes per GB, idle CPU
// and memory per box over a window nobody watches, failed starts, and the create latency
// (POST /v1/boxes → ready, one at a time) at 1, 10, 40 and 80 live boxes. The anchor is the
// create at 1 live box in the same run.
//   BENCH_DENSITY_BUDGET  memory of all boxes together (default 20g)
//   BENCH_DENSITY_MAX     most boxes (default 80)
//   BENCH_DENSITY_IDLE_S  idle window in seconds (default 30)
//   BENCH_DENSITY_SAMPLES creates measured at each level (default 5)

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;
const BUDGET = parseSize(process.env.BENCH_DENSITY_BUDGET ?? "20g");
const MAX = Number(process.env.BENCH_DENSITY_MAX ?? 80);
const IDLE_S = Number(process.env.BENCH_DENSITY_IDLE_S ?? 30);
const SAMPLES = Number(process.env.BENCH_DENSITY_SAMPLES ?? 5);
const LEVELS = [1, 10, 40, 80];
const AT_ONCE = 4;

function parseSize(s: string): number {
  const m = /^(\d+(?:\.\d+)?)([mg])$/i.exec(s);
  if (!m) throw new Error(`BENCH_DENSITY_BUDGET: not a size: ${s}`);
  return Number(m[1]) * (m[2]!.toLowerCase() === "g" ? GIB : MIB);
}

const cgroup = (kind: string, id: string, file: string) => fs.readFileSync(`/sys/fs/cgroup/${kind}/docker/${id}/${file}`, "utf8");
const cpuNs = (id: string) => Number(cgroup("cpuacct", id, "cpuacct.usage"));
const memBytes = (id: string) => Number(cgroup("memory", id, "memory.usage_in_bytes"));

/** CPU ticks (1/100 s) of the engine's own processes: dockerd, containerd and the shims. */
function engineTicks(): number {
  let t = 0;
  for (const p of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const s = fs.readFileSync(`/proc/${p}/stat`, "utf8");
      const name = s.slice(s.indexOf("(") + 1, s.lastIndexOf(")"));
      if (!/^(dockerd|containerd|containerd-shim.*)$/.test(name)) continue;
      const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
      t += Number(f[11]) + Number(f[12]);
    } catch {
      /* gone meanwhile */
    }
  }
  return t;
}

async function containerId(boxId: string): Promise<string> {
  return (await docker.getContainer(`holm-${boxId}`).inspect()).Id;
}

interface Tally {
  ready: string[];
  failed: { id?: string; why: string }[];
  refused: number;
}

/** One create through /v1 (inline: answers once ready); the time it took, or undefined when it did not start. */
async function create(server: TestServer, tally: Tally): Promise<number | undefined> {
  const t0 = now();
  const res = await server.api("/v1/boxes", { method: "POST", json: {} });
  const took = now() - t0;
  const body = await json(res);
  if (res.status === 201 || res.status === 200) {
    if (body.state === "ready") {
      tally.ready.push(body.id);
      return took;
    }
  }
  if (res.status === 503 && body.retryable) tally.refused++;
  else tally.failed.push({ id: body.id, why: `${res.status} ${body.message ?? body.state}` });
  return undefined;
}

async function remove(server: TestServer, id: string) {
  await server.api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
}

export async function benchDensity() {
  const server = await startServer({ HOLM_LAUNCH_CONCURRENCY: String(AT_ONCE) });
  const tally: Tally = { ready: [], failed: [], refused: 0 };
  const latency = new Map<number, number[]>();
  const t0 = Date.now();
  try {
    const used = async () => {
      let sum = 0;
      for (const id of tally.ready) sum += memBytes(await containerId(id));
      return sum;
    };
    const measureAt = async (level: number) => {
      // Creates one at a time with level-1 boxes idle, each removed again: the level stays.
      const samples: number[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        const before = tally.ready.length;
        const took = await create(server, tally);
        if (took !== undefined) {
          samples.push(took);
          await remove(server, tally.ready.pop()!);
        }
        if (tally.ready.length !== before) throw new Error("level changed while measuring");
      }
      latency.set(level, samples);
    };
    let memory = 0;
    /** Fills to `want` idle boxes, 4 at a time, within the budget; false when it could not. */
    const fill = async (want: number) => {
      while (tally.ready.length < want && memory < BUDGET && Date.now() - t0 < 60 * 60_000) {
        const n = Math.min(AT_ONCE, want - tally.ready.length);
        const before = tally.failed.length + tally.refused;
        await Promise.all(Array.from({ length: n }, () => create(server, tally)));
        memory = await used();
        console.log(`  ${tally.ready.length} live, ${(memory / GIB).toFixed(2)} GiB, ${tally.failed.length} failed, ${tally.refused} refused`);
        // Refused (no capacity) or failed every time: the machine holds no more.
        if (tally.failed.length + tally.refused - before === n) break;
      }
      return tally.ready.length >= want;
    };
    for (const level of LEVELS) {
      if (level > MAX) break;
      if (!(await fill(level - 1))) break;
      // Let the last starts settle (a new Chromium works for several seconds after ready): the
      // latency at a level is of an idle machine with that many boxes.
      await new Promise((r) => setTimeout(r, 15_000));
      await measureAt(level);
    }
    await fill(MAX);
    const n = tally.ready.length;
    // Nobody watching: no viewer, no thumbnail, no API call during the window.
    await new Promise((r) => setTimeout(r, 15_000));
    const ids = await Promise.all(tally.ready.map(containerId));
    const c0 = ids.map(cpuNs);
    const e0 = engineTicks();
    const w0 = now();
    await new Promise((r) => setTimeout(r, IDLE_S * 1000));
    const secs = (now() - w0) / 1000;
    const cpu = ids.map((id, i) => ((cpuNs(id) - c0[i]!) / 1e9 / secs) * 100);
    const engine = ((engineTicks() - e0) / 100 / secs) * 100;
    const mem = ids.map(memBytes);
    const total = mem.reduce((a, b) => a + b, 0);
    console.log(`${n} idle boxes (budget ${(BUDGET / GIB).toFixed(1)} GiB, most ${MAX}), ${tally.failed.length} failed starts, ${tally.refused} refused (503)`);
    for (const f of tally.failed) console.log(`  failed: ${f.id ?? "?"} ${f.why}`);
    if (n > 0) {
      console.log(`boxes per GB: ${(n / (total / 1e9)).toFixed(2)}  (memory of all boxes ${(total / GIB).toFixed(2)} GiB)`);
      summarize("memory per idle box", mem.map((b) => b / MIB), "MiB");
      summarize(`idle CPU per box over ${IDLE_S} s (% of a core)`, cpu, "%");
      console.log(`idle CPU of all boxes ${cpu.reduce((a, b) => a + b, 0).toFixed(1)} % of a core; the engine's own processes ${engine.toFixed(1)} %`);
    }
    let anchor: number | undefined;
    for (const [level, samples] of latency) {
      if (!samples.length) continue;
      const s = summarize(`POST /v1/boxes → ready at ${level} live box(es)`, samples);
      if (level === 1) anchor = s.median;
      else if (anchor) console.log(`  ratio to 1 live (median) ${(s.median / anchor).toFixed(2)}× (target at 80 ≤ 1.5×)`);
    }
  } finally {
    await Promise.all(tally.ready.map((id) => remove(server, id).catch(() => undefined)));
    await server.stop();
    await removeTestBoxes();
  }
}
