import type { BoxStart } from "~/protocol/box-console";
import { type BoxRow, trace } from "./box-record.server";
import { traceStartedFresh } from "./trace.server";

// The first entries of a box taken back at start whose trace is empty (box-sync.server.ts): the
// memory store forgot it, or the server died before writing it. Written once: the next start
// finds a trace.

/**
 * Whether this row was claimed from the warm pool (ADR 0014): a claim sets `created_at_ms` to its
 * own time and keeps the start of the pool launch, which began before it; a cold create's start
 * begins at its `created_at_ms`, and a later start (a resume) after it.
 */
function claimedFromPool(row: BoxRow): boolean {
  if (row.pooled || !row.start_json) return false;
  const first = (JSON.parse(row.start_json) as BoxStart).phases[0]?.at_ms;
  return typeof first === "number" && first < Number(row.created_at_ms);
}

/**
 * Starts the trace of a box taken back at start, if it has none: `adopted`. A pool box has none
 * until its claim. A claimed box whose claim was cut short on a durable store (killed between
 * `pooled = 1 → 0` and the claim's trace) gets the `box_created` it missed first, so its owner
 * sees where the box came from. `claimRecorded`: the memory store kept its claim (pool-claims.server.ts);
 * its traces all start again with `adopted`, which says the box was claimed from the pool.
 */
export async function startAdoptedTrace(row: BoxRow, claimRecorded = false): Promise<void> {
  if (row.pooled || !(await traceStartedFresh(row.id))) return;
  const [spec, placement] = [JSON.parse(row.spec_json) as unknown, JSON.parse(row.placement_json) as unknown];
  if (!claimRecorded && claimedFromPool(row)) {
    await trace(row.id, "box_created", { spec, placement, claimed_from_pool: true, claimed_at_ms: Number(row.created_at_ms) });
  }
  await trace(row.id, "adopted", { spec, placement, ...(claimRecorded && { claimed_from_pool: true }) });
}
