import { type TraceSummary, cloneSummary, emptySummary, foldEntries } from "./trace-summary";
import { TRACE_PAGE_MAX, readTrace } from "./trace.server";

// The summary the console's trace page loads with (bounds, every frame, takeover periods), built
// by folding the trace page by page. A model, not part of the route, because it keeps state
// across requests: summaries per box, least recently used first; a trace only grows, so each
// load folds just the new tail. The fold itself is shared with the browser (trace-summary.tsx),
// which folds the entries that arrive later.

const summaries = new Map<string, TraceSummary>();
const building = new Map<string, Promise<unknown>>();
const SUMMARIES_MAX = 64;

async function build(boxId: string): Promise<TraceSummary> {
  // Pruning and the memory store's cap drop a trace's head: start over when the first entry moved.
  const head = await readTrace(boxId, { limit: 1 });
  const first = head.entries[0]?.seq ?? null;
  let s = summaries.get(boxId);
  if (!s || s.first !== first) s = emptySummary();
  let after = s.last ?? -1;
  for (;;) {
    const page = await readTrace(boxId, { after, limit: TRACE_PAGE_MAX });
    foldEntries(s, page.entries);
    if (page.next === null || page.entries.length === 0) break;
    after = page.next;
  }
  summaries.delete(boxId);
  summaries.set(boxId, s);
  while (summaries.size > SUMMARIES_MAX) summaries.delete(summaries.keys().next().value as string);
  return s;
}

/**
 * The summary of a box's trace (the caller has checked that it may read it, with traceBox). One
 * fold at a time per box; the answer is a copy, so later folds do not change it.
 */
export async function traceSummary(boxId: string): Promise<TraceSummary> {
  const prev = building.get(boxId) ?? Promise.resolve(undefined);
  const p = prev.catch(() => undefined).then(() => build(boxId));
  building.set(boxId, p);
  try {
    return cloneSummary(await p);
  } finally {
    if (building.get(boxId) === p) building.delete(boxId);
  }
}
