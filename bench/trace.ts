import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { now, summarize } from "./stats";

// The durable trace store in-process: one box with 10,000 entries and 256 frames. Reads pages of
// 500 (target p95 ≤ 20 ms) and times recordEntries of a 10-step batch. Sets the storage env before
// the first import of the app modules, so run it before anything else reads the environment.

const ENTRIES = 10_000;
const FRAMES = 256;

export async function benchTrace() {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-bench-trace-"));
  const saved = { backend: process.env.HOLM_STORAGE_BACKEND, dir: process.env.HOLM_STATE_DIR };
  process.env.HOLM_STORAGE_BACKEND = "local";
  process.env.HOLM_STATE_DIR = stateDir;
  const { env } = await import("../app/utils/env.server");
  if (env().HOLM_STORAGE_BACKEND !== "local" || env().HOLM_STATE_DIR !== stateDir) {
    throw new Error("the environment was read before the trace bench set it; run the bench on its own");
  }
  const { closeDb, openDb } = await import("../app/utils/db.server");
  const trace = await import("../app/models/trace.server");
  await openDb();
  try {
    const box = "box_be0c0000000000000000000000000001";
    const png = Buffer.alloc(60_000, 7);
    // Entries as a batch records them: an acted entry per step, a frame every ~39 entries.
    let frames = 0;
    const fillStart = now();
    for (let i = 0; i < ENTRIES; i += 100) {
      const batch = Array.from({ length: 100 }, (_, j) => {
        const n = i + j;
        const frameHere = frames < FRAMES && n % Math.floor(ENTRIES / FRAMES) === 0;
        if (!frameHere) {
          return { actor: "agent" as const, event: "acted", screen: 0, data: { step: n, type: "click", ok: true, ms: 12 } };
        }
        const f = frames++;
        const bytes = Buffer.concat([png, Buffer.from(String(f))]);
        return {
          actor: "agent" as const,
          event: "frame",
          screen: 0,
          frame: { hash: createHash("sha1").update(bytes).digest("hex"), png: bytes },
        };
      });
      await trace.recordEntries(box, batch);
    }
    console.log(`filled ${ENTRIES} entries with ${frames} frames in ${(now() - fillStart).toFixed(0)} ms`);

    const pages: number[] = [];
    for (let round = 0; round < 20; round++) {
      let after = -1;
      for (;;) {
        const t0 = now();
        const page = await trace.readTrace(box, { after, limit: 500 });
        pages.push(now() - t0);
        if (page.next === null) break;
        after = page.next;
      }
    }
    summarize("trace: read a page of 500 (local, 10k entries)", pages.slice(20));

    const batches: number[] = [];
    const steps = Array.from({ length: 10 }, (_, i) => ({
      actor: "agent" as const,
      event: "acted",
      screen: 0,
      data: { step: i, type: "key", keys: "ctrl+l", ok: true, ms: 3 },
    }));
    for (let i = 0; i < 1100; i++) {
      const t0 = now();
      await trace.recordEntries(box, steps);
      batches.push(now() - t0);
    }
    summarize("trace: recordEntries, 10-step batch (local)", batches.slice(100));

    const singles: number[] = [];
    for (let i = 0; i < 2100; i++) {
      const t0 = now();
      await trace.recordEntry(box, { actor: "agent", event: "acted", screen: 0, data: { i } });
      singles.push(now() - t0);
    }
    summarize("trace: recordEntry, one entry (local)", singles.slice(100));

    const mem = new trace.MemoryTraceStore();
    const memSingles: number[] = [];
    for (let i = 0; i < 5100; i++) {
      const t0 = now();
      await mem.recordEntries(box, [{ actor: "agent", event: "acted", screen: 0, data: { i } }]);
      memSingles.push(now() - t0);
    }
    summarize("trace: recordEntry, one entry (memory)", memSingles.slice(100));
  } finally {
    await closeDb();
    fs.rmSync(stateDir, { recursive: true, force: true });
    for (const [k, v] of [["HOLM_STORAGE_BACKEND", saved.backend], ["HOLM_STATE_DIR", saved.dir]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchTrace();
