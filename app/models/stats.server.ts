import { sql } from "kysely";
import { db } from "~/utils/db.server";
import type { BoxState } from "./box-record.server";
import { poolStatus } from "./pool-status.server";
import { heldTakeovers } from "./takeover-store.server";
import { MemoryTraceStore, traceStore } from "./trace.server";

// What the metrics read at scrape time (server/metrics.ts): counts from the store and from this
// server's memory. Store-wide figures (boxes, trace size) are the same on every server of a
// cluster; the pool and held takeovers are this server's view.

const STATES: BoxState[] = ["starting", "ready", "paused", "stopped", "unreachable", "gone", "failed"];

/** Boxes not removed, by state (every state present, zero when none). */
export async function boxesByState(): Promise<Record<string, number>> {
  const rows = await db()
    .selectFrom("box")
    .select(["state", (eb) => eb.fn.countAll<number>().as("n")])
    .where("removed_at_ms", "is", null)
    .groupBy("state")
    .execute();
  const out: Record<string, number> = Object.fromEntries(STATES.map((s) => [s, 0]));
  for (const r of rows) out[r.state] = Number(r.n);
  return out;
}

/** The trace store's entries and frame bytes (the memory store counts what it holds). */
export async function traceStoreSize(): Promise<{ entries: number; frameBytes: number }> {
  const store = traceStore();
  if (store instanceof MemoryTraceStore) return store.size();
  const [entries, frames] = await Promise.all([
    db().selectFrom("trace_entry").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirst(),
    db().selectFrom("trace_frame").select(sql<number>`coalesce(sum(bytes), 0)`.as("b")).executeTakeFirst(),
  ]);
  return { entries: Number(entries?.n ?? 0), frameBytes: Number(frames?.b ?? 0) };
}

/** The warm pool per spec key: boxes wanted and ready. */
export async function poolSizes(): Promise<{ key: string; size: number; ready: number }[]> {
  return (await poolStatus()).specs.map((s) => ({ key: s.key, size: s.size, ready: s.ready }));
}

export function takeoversHeld(): number {
  return heldTakeovers().length;
}
