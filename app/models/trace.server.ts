import path from "node:path";
import { notFound } from "~/utils/api-error.server";
import { db } from "~/utils/db.server";
import { env } from "~/utils/env.server";
import type { Actor } from "./actor";
import { issuerName } from "./actor-name.server";
import { LocalTraceStore } from "./trace-local.server";
import { MemoryTraceStore } from "./trace-memory.server";
import { PostgresTraceStore } from "./trace-postgres.server";
import type { FrameInput, PruneCutoffs, PruneOptions, PruneResult, TraceActor, TraceEntry, TraceEntryInput, TracePage, TraceStore } from "./trace-types.server";
import { DEFAULT_MAX_ENTRY_AGE_MS, DEFAULT_MAX_FRAME_AGE_MS, clampPage, frameEntry } from "./trace-types.server";

// The trace: what was done to each box, in order. Two stores behind one interface, chosen by
// HOLM_STORAGE_BACKEND: `memory` keeps capped traces in plain structures (lost at a restart);
// `local` keeps entries in the SQLite store and frame PNGs as files under
// $HOLM_STATE_DIR/frames/<aa>/<hash>.png; `postgres` keeps both in PostgreSQL, shared by every
// server of the database (docs/decisions/0020). Either way a trace outlives its box until pruned.
// The stores live in trace-memory.server.ts, trace-local.server.ts and trace-postgres.server.ts,
// what they share in trace-types.server.ts; this module is the API the rest of the server uses.

export type {
  FrameEntry,
  FrameInput,
  PruneCutoffs,
  PruneOptions,
  PruneResult,
  TraceActor,
  TraceEntry,
  TraceEntryInput,
  TracePage,
  TraceStore,
} from "./trace-types.server";
export {
  DEFAULT_MAX_ENTRY_AGE_MS,
  DEFAULT_MAX_FRAME_AGE_MS,
  MEMORY_MAX_BOXES,
  MEMORY_MAX_ENTRIES_PER_BOX,
  MEMORY_MAX_FRAMES_PER_BOX,
  TRACE_PAGE_DEFAULT,
  TRACE_PAGE_MAX,
  frameHash,
  frameHashOf,
} from "./trace-types.server";
export { LocalTraceStore, MemoryTraceStore, PostgresTraceStore };

const BOX_ID_RE = /^box_[0-9a-f]{8,64}$/;

let current: TraceStore | undefined;

/** The store HOLM_STORAGE_BACKEND names, made on first use. */
export function traceStore(): TraceStore {
  if (!current) {
    const e = env();
    current =
      e.HOLM_STORAGE_BACKEND === "local"
        ? new LocalTraceStore(path.join(e.HOLM_STATE_DIR, "frames"))
        : e.HOLM_STORAGE_BACKEND === "postgres"
          ? new PostgresTraceStore()
          : new MemoryTraceStore();
  }
  return current;
}

/** Appends one entry; seq is assigned in call order per box, without gaps. */
export async function recordEntry(boxId: string, entry: TraceEntryInput): Promise<TraceEntry> {
  return (await recordEntries(boxId, [entry]))[0]!;
}

/**
 * Appends several entries (the steps of one batch) in one write. An entry that names an issuer
 * in `data.by` but not its name (a person's input, the terminal) gets `data.by_name` here, so
 * every entry someone caused reads with their name as it was then.
 */
export function recordEntries(boxId: string, entries: TraceEntryInput[]): Promise<TraceEntry[]> {
  return inOrder(boxId, entries.some(needsName) ? withNames(entries) : entries, (named) => traceStore().recordEntries(boxId, named));
}

const needsName = (e: TraceEntryInput) => typeof e.data?.by === "string" && e.data.by_name === undefined;

async function withNames(entries: TraceEntryInput[]): Promise<TraceEntryInput[]> {
  return Promise.all(
    entries.map(async (e) => {
      if (!needsName(e)) return e;
      const by = e.data!.by as string;
      return { ...e, data: { ...e.data, by_name: await issuerName(by).catch(() => by) } };
    }),
  );
}

// The stores number entries in the order their calls arrive. A write that first looks up a name
// waits for it, so until it has reached its store, later writes of the same box wait behind it.
const naming = new Map<string, Promise<void>>();

function inOrder<A, T>(boxId: string, ready: A | Promise<A>, write: (a: A) => Promise<T>): Promise<T> {
  const before = naming.get(boxId);
  if (!before && !(ready instanceof Promise)) return write(ready);
  let reached!: () => void;
  const gate = new Promise<void>((r) => (reached = r));
  naming.set(boxId, gate);
  return (async () => {
    try {
      await before;
      // The call enters the store's own chain before `finally` lets the next write go.
      return write(await ready);
    } finally {
      reached();
      if (naming.get(boxId) === gate) naming.delete(boxId);
    }
  })();
}

/**
 * Records a `frame` entry when the frame's bytes (by the server's SHA-256 of them) differ from
 * the last frame recorded for this box and screen; a still screen adds nothing (undefined). The
 * actor is the one holding the screen.
 */
export function recordFrameIfChanged(
  boxId: string,
  screen: number,
  actor: TraceActor,
  frame: FrameInput,
  data?: Record<string, unknown>,
): Promise<TraceEntry | undefined> {
  return inOrder(boxId, frameEntry(screen, actor, frame, data), (entry) => traceStore().recordFrameIfChanged(boxId, entry));
}

/** A page of entries with seq > after (default -1: from the start); limit 1–500, default 100. */
export function readTrace(boxId: string, opts: { after?: number; limit?: number } = {}): Promise<TracePage> {
  return traceStore().readTrace(boxId, clampPage(opts));
}

/** A frame's PNG, if some trace still refers to it. */
export function readFrame(hash: string): Promise<Buffer | undefined> {
  return traceStore().readFrame(hash);
}

/** A frame's PNG, only if this box's trace refers to it. */
export function readBoxFrame(boxId: string, hash: string): Promise<Buffer | undefined> {
  return traceStore().readBoxFrame(boxId, hash);
}

/** Whether any entry was ever recorded for this box (pruned entries count). */
export function hasTrace(boxId: string): Promise<boolean> {
  return traceStore().hasTrace(boxId);
}

/** True when the store has no entry for this box, so its trace starts now (record `adopted`). */
export async function traceStartedFresh(boxId: string): Promise<boolean> {
  return !(await traceStore().hasTrace(boxId));
}

/**
 * Scheduled pruning, in this order: frames not referred to for maxFrameAgeMs (7 days), entries
 * older than maxEntryAgeMs (30 days), then whole traces of boxes removed more than
 * maxRemovedAgeMs ago (default: maxEntryAgeMs), then frames no remaining entry refers to.
 * Counts what it removed: frame PNGs, entries, whole traces.
 */
export function pruneTraces(opts: PruneOptions = {}): Promise<PruneResult> {
  return traceStore().prune(pruneCutoffs(opts));
}

/** The times before which pruning removes frames, entries and removed boxes' traces (recordings follow the last two). */
export function pruneCutoffs(opts: PruneOptions = {}): PruneCutoffs {
  const now = opts.now ?? Date.now();
  const maxEntryAgeMs = opts.maxEntryAgeMs ?? DEFAULT_MAX_ENTRY_AGE_MS;
  return {
    frames: now - (opts.maxFrameAgeMs ?? DEFAULT_MAX_FRAME_AGE_MS),
    entries: now - maxEntryAgeMs,
    removed: now - (opts.maxRemovedAgeMs ?? maxEntryAgeMs),
  };
}

export interface TraceBox {
  id: string;
  /** The name people gave the box, if any (it stays after the box is removed, as the trace does). */
  name: string | null;
  owner: string | null;
  removed: boolean;
}

/**
 * The box whose trace the actor may read. Unlike getBox, a removed box answers (its trace
 * stays); another workspace's box is `not_found`, as for every box route.
 */
export async function traceBox(actor: Actor, id: string): Promise<TraceBox> {
  const row = BOX_ID_RE.test(id)
    ? await db()
        .selectFrom("box")
        .select(["id", "name", "owner", "state", "removed_at_ms"])
        .where("id", "=", id)
        .where("pooled", "=", 0)
        .executeTakeFirst()
    : undefined;
  const owner = actor.kind === "workspace" ? actor.workspaceId : undefined;
  if (!row || (owner !== undefined && row.owner !== owner)) throw notFound(`no box ${id}`);
  return { id: row.id, name: row.name, owner: row.owner, removed: row.removed_at_ms !== null || row.state === "gone" };
}
