import { docker, json, removeTestBoxes, startServer } from "../tests/support/server";
import { now, summarize } from "./stats";

// GET /v1/boxes/{id} with 50 boxes recorded, and the memory of an idle box.

const BOXES = Number(process.env.BENCH_BOXES ?? 50);

export async function benchBoxRead() {
  const server = await startServer({ HOLM_SERVER_JOBS: "queue" });
  try {
    // Launched in the background, all at once: 50 real boxes, queued.
    const ids: string[] = [];
    for (let i = 0; i < BOXES; i++) {
      const box = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
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
    summarize(`GET /v1/boxes/{id} (${BOXES} boxes recorded)`, samples.slice(200));

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
