import { RUN_LABEL, type TestServer, docker, json, removeTestBoxes, startServer } from "../tests/support/server";
import { rawStart } from "./box-start";
import { now, summarize } from "./stats";

// The warm pool (ADR 0014): POST /v1/boxes claiming a ready pool box, side by side in one run
// with a cold POST /v1/boxes → ready (a placement the pool does not hold: cpus "2") and a bare
// `docker run` of the same image (bench/box-start.ts); then the time the pool takes to be full
// again after POOL claims in a row.

const POOL = Number(process.env.BENCH_POOL ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);

/** Resolves once the server has logged the pool full after `from` (its log's length then). */
async function poolFull(server: TestServer, from: number, within = 120_000): Promise<void> {
  const deadline = Date.now() + within;
  const full = new RegExp(`pool: box_[0-9a-f]+ ready \\(${POOL} of ${POOL} default\\)|pool: ${POOL} box\\(es\\) back`);
  while (Date.now() < deadline) {
    if (full.test(server.logs().slice(from))) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error("the pool did not fill");
}

const remove = (server: TestServer, id: string) => server.api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });

export async function benchPool() {
  const server = await startServer({ HOLM_POOL: `default=${POOL}`, HOLM_POOL_MAX_MEMORY: `${POOL * 2}g` });
  try {
    await poolFull(server, 0);
    const image = (await docker.listContainers({ filters: { label: ["holm.pool=1", `holm.test=${RUN_LABEL}`] } }))[0]!.Image;
    const claims: number[] = [];
    const refills: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const claimed: string[] = [];
      const mark = server.logs().length;
      for (let i = 0; i < POOL; i++) {
        const t0 = now();
        const box = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
        claims.push(now() - t0);
        if (box.state !== "ready") throw new Error(`claim did not answer a ready box: ${JSON.stringify(box)}`);
        claimed.push(box.id);
      }
      const t1 = now();
      await poolFull(server, mark);
      refills.push(now() - t1);
      for (const id of claimed) await remove(server, id);
    }
    const cold: number[] = [];
    const raw: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      raw.push(await rawStart(image));
      const t0 = now();
      const box = await json(await server.api("/v1/boxes", { method: "POST", json: { placement: { cpus: "2" } } }));
      cold.push(now() - t0);
      if (box.state !== "ready") throw new Error(`box did not start: ${JSON.stringify(box)}`);
      await remove(server, box.id);
    }
    const c = summarize("POST /v1/boxes claiming a warm pool box", claims);
    const k = summarize("POST /v1/boxes → ready, cold", cold);
    const d = summarize("docker run → X, VNC, CDP answer", raw);
    summarize(`refill after ${POOL} claims (to ${POOL} ready)`, refills);
    console.log(
      `claim ${(c.median / k.median).toFixed(3)}× of a cold create, ${(c.median / d.median).toFixed(3)}× of docker run (median); ` +
        `goal claim p50 ≤ 30 ms (${c.median.toFixed(1)}), p95 ≤ 60 ms (${c.p95.toFixed(1)})`,
    );
  } finally {
    await server.stop();
    await removeTestBoxes();
    await removeTestBoxes("bench");
  }
}
