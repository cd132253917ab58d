import { docker, json, removeTestBoxes, startServer } from "../tests/support/server";
import { now, summarize } from "./stats";

// GET /v1/boxes/{id} and GET /v1/boxes with BENCH_BOXES live boxes (80 by default: the issue's
// density goal; develop with fewer), and the memory of an idle box. Goals: p95 ≤ 5 ms and ≤ 20 ms.

const BOXES = Number(process.env.BENCH_BOXES ?? 80);

export async function benchBoxRead() {
  const server = await startServer({ HOLM_SERVER_JOBS: "queue" });
  try {
    // Launched in the background, queued. The server admits a box only with room for it
    // (503 unavailable, retryable, while earlier ones still start: ADR 0016): retry as told.
    const ids: string[] = [];
    while (ids.length < BOXES) {
      const res = await server.api("/v1/boxes", { method: "POST", json: {} });
      const box = await json(res);
      if (res.status === 503 && box.retryable) {
        await new Promise((r) => setTimeout(r, 1000));
        continue;
      }
      if (!box.id) throw new Error(`create answered ${res.status}: ${JSON.stringify(box)}`);
      ids.push(box.id);
    }
    const deadline = Date.now() + 15 * 60_000;
    for (;;) {
      const list = await json(await server.api("/v1/boxes"));
      const ready = list.boxes.filter((b: any) => b.state === "ready").length;
      const failed = list.boxes.filter((b: any) => b.state === "failed").length;
      if (ready + failed === BOXES) {
        console.log(`${ready} boxes ready, ${failed} failed`);
        break;
      }
      if (Date.now() > deadline) throw new Error("boxes did not start in time");
      await new Promise((r) => setTimeout(r, 2000));
    }
    // Let the last starts settle so the reads are measured on a quiet machine.
    await new Promise((r) => setTimeout(r, 15_000));
    const samples: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const id = ids[i % ids.length]!;
      const t0 = now();
      const res = await server.api(`/v1/boxes/${id}`);
      await res.arrayBuffer();
      samples.push(now() - t0);
    }
    const one = summarize(`GET /v1/boxes/{id} (${BOXES} live boxes)`, samples.slice(200));
    console.log(`  target p95 ≤ 5 ms (${one.p95 <= 5 ? "met" : "missed"})`);
    const listed: number[] = [];
    for (let i = 0; i < 300; i++) {
      const t0 = now();
      const res = await server.api("/v1/boxes");
      await res.arrayBuffer();
      listed.push(now() - t0);
    }
    const list = summarize(`GET /v1/boxes (${BOXES} live boxes)`, listed.slice(30));
    console.log(`  target p95 ≤ 20 ms (${list.p95 <= 20 ? "met" : "missed"})`);

    // Idle memory: settle, then read each ready container's usage once.
    await new Promise((r) => setTimeout(r, 10_000));
    const mem: number[] = [];
    const ready = (await json(await server.api("/v1/boxes"))).boxes.filter((b: any) => b.state === "ready");
    for (const { id } of ready.slice(0, 10)) {
      const stats = await docker.getContainer(`holm-${id}`).stats({ stream: false });
      const usage = stats.memory_stats.usage - (stats.memory_stats.stats?.cache ?? 0);
      mem.push(usage / 1024 ** 2);
    }
    summarize("idle box memory (10 boxes)", mem, "MiB");
  } finally {
    await server.stop();
    await removeTestBoxes();
  }
}
