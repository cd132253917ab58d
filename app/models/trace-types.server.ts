import { createHash } from "node:crypto";
import { TRACE_PAGE_DEFAULT, TRACE_PAGE_MAX } from "~/protocol/api-box";
import { db } from "~/utils/db.server";

// The trace's shared vocabulary: the types, limits and entry helpers both stores use. The
// stores and the module's API (trace.server.ts) import from here, never from each other.

export type TraceActor = "agent" | "person" | "server";

export interface TraceEntry {
  seq: number;
  at_ms: number;
  actor: TraceActor;
  event: string;
  screen?: number;
  /** The content hash of the frame this entry recorded (GET …/trace/frames/{hash}). */
  frame?: string;
  data?: Record<string, unknown>;
}

/**
 * The batch an `acted` entry's step ran in, on each step of it: one `acted` entry per step (001),
 * grouped so that a fork sends them to the box as one batch again. It has to: a button or key a
 * step holds is let go when its batch ends, so `mouse_down`, `move`, `mouse_up` in one batch is a
 * drag, and the same three in three batches is not.
 */
export interface BatchMark {
  /** The same on every step of one batch, and on no other. */
  id: string;
  /** The step's place in the batch as sent (0-based). */
  index: number;
  /** When the box began the batch (ms since the epoch); the entries' `at_ms` is when it ended. */
  began_ms: number;
  settle_ms?: number;
  want?: ("frame" | "cursor")[];
  keep_going?: boolean;
}

/** What an `acted` entry holds: the step without file or clipboard contents, and its outcome. */
export interface ActedData {
  step: Record<string, unknown>;
  ok: boolean;
  code?: string;
  /** Absent in traces recorded before batches were marked: a fork replays those step by step. */
  batch?: BatchMark;
}

/**
 * A frame to record: its PNG bytes only. The store names it by the SHA-256 of those bytes,
 * computed here: a hash a box reports is never trusted, or one box could plant a picture under
 * the hash another box's screen will have (frames are shared by content across boxes).
 */
export interface FrameInput {
  png: Buffer;
}

/** A frame as stored: its bytes and the server's hash of them (lowercase hex). */
export interface StoredFrame {
  hash: string;
  png: Buffer;
}

/** The name of a frame's bytes in the store. */
export function frameHashOf(png: Uint8Array): string {
  return createHash("sha256").update(png).digest("hex");
}

export interface TraceEntryInput {
  actor: TraceActor;
  event: string;
  screen?: number;
  data?: Record<string, unknown>;
  frame?: FrameInput;
  /** When it happened; now by default. Clamped so that at_ms never decreases along a trace. */
  at_ms?: number;
}

export interface TracePage {
  entries: TraceEntry[];
  /** The `after` for the next page, or null when there is no more (for now). */
  next: number | null;
}

export interface PruneOptions {
  now?: number;
  /** A frame no entry referred to for this long is removed. Default 7 days. */
  maxFrameAgeMs?: number;
  /** Entries older than this are removed. Default 30 days. */
  maxEntryAgeMs?: number;
  /** The whole trace of a box removed longer ago than this goes. Default: maxEntryAgeMs. */
  maxRemovedAgeMs?: number;
}

export interface PruneResult {
  frames: number;
  entries: number;
  boxes: number;
}

/**
 * What a store removes, as times (ms) worked out once from PruneOptions by the module's API:
 * frames last referred to before `frames`, entries from before `entries`, whole traces of boxes
 * removed before `removed`. The stores only delete; the policy (the ages) lives in one place.
 */
export interface PruneCutoffs {
  frames: number;
  entries: number;
  removed: number;
}

export interface TraceStore {
  readonly kind: "memory" | "local" | "postgres";
  recordEntries(boxId: string, entries: TraceEntryInput[]): Promise<TraceEntry[]>;
  /** Records the entry (made by frameEntry) unless its hash is the last one on its screen. */
  recordFrameIfChanged(boxId: string, entry: FrameEntry): Promise<TraceEntry | undefined>;
  readTrace(boxId: string, opts: { after: number; limit: number }): Promise<TracePage>;
  readFrame(hash: string): Promise<Buffer | undefined>;
  readBoxFrame(boxId: string, hash: string): Promise<Buffer | undefined>;
  hasTrace(boxId: string): Promise<boolean>;
  prune(cutoffs: PruneCutoffs): Promise<PruneResult>;
}

export const MEMORY_MAX_ENTRIES_PER_BOX = 10_000;
export const MEMORY_MAX_FRAMES_PER_BOX = 256;
export const MEMORY_MAX_BOXES = 256;
// Written once with the trace route's query (app/protocol/api-box.ts).
export { TRACE_PAGE_DEFAULT, TRACE_PAGE_MAX };
const DAY_MS = 86_400_000;
export const DEFAULT_MAX_FRAME_AGE_MS = 7 * DAY_MS;
export const DEFAULT_MAX_ENTRY_AGE_MS = 30 * DAY_MS;

const ACTORS: ReadonlySet<string> = new Set(["agent", "person", "server"]);
const HASH_RE = /^[0-9a-f]{16,128}$/;
/** Rows per INSERT, well under SQLite's bound-parameter limit. */
export const INSERT_CHUNK = 500;
export const PRUNE_CHUNK = 5000;
/** Bound on the per-box caches (they reload from the store on a miss). */
const CACHE_MAX = 4096;

/** A frame hash as stored (lowercase hex), or undefined if it cannot be one. */
export function frameHash(hash: string): string | undefined {
  const h = hash.toLowerCase();
  return HASH_RE.test(h) ? h : undefined;
}

export interface Prepared {
  actor: TraceActor;
  event: string;
  screen?: number;
  at_ms?: number;
  frame?: StoredFrame;
  data_json?: string;
}

export function prepare(e: TraceEntryInput): Prepared {
  if (!ACTORS.has(e.actor)) throw new Error(`trace: unknown actor ${JSON.stringify(e.actor)}`);
  if (typeof e.event !== "string" || e.event === "" || e.event.length > 64) {
    throw new Error(`trace: the event must be a name of 1 to 64 characters`);
  }
  if (e.screen !== undefined && !(Number.isInteger(e.screen) && e.screen >= 0)) {
    throw new Error(`trace: bad screen ${e.screen}`);
  }
  if (e.at_ms !== undefined && !Number.isFinite(e.at_ms)) throw new Error(`trace: bad at_ms ${e.at_ms}`);
  const p: Prepared = { actor: e.actor, event: e.event };
  if (e.screen !== undefined) p.screen = e.screen;
  if (e.at_ms !== undefined) p.at_ms = Math.floor(e.at_ms);
  if (e.frame) {
    if (!(e.frame.png instanceof Uint8Array) || e.frame.png.length === 0) throw new Error("trace: a frame needs PNG bytes");
    p.frame = { hash: frameHashOf(e.frame.png), png: e.frame.png };
  }
  if (e.data !== undefined) p.data_json = JSON.stringify(e.data);
  return p;
}

export function makeEntry(seq: number, at_ms: number, p: Prepared): TraceEntry {
  const e: TraceEntry = { seq, at_ms, actor: p.actor, event: p.event };
  if (p.screen !== undefined) e.screen = p.screen;
  if (p.frame) e.frame = p.frame.hash;
  if (p.data_json !== undefined) e.data = JSON.parse(p.data_json);
  return e;
}

/** A prepared `frame` entry: it always has its screen and its frame. */
export type FrameEntry = Prepared & { screen: number; frame: StoredFrame };

export function frameEntry(screen: number, actor: TraceActor, frame: FrameInput, data?: Record<string, unknown>): FrameEntry {
  const input: TraceEntryInput = { actor, event: "frame", screen, frame };
  if (data) input.data = data;
  return prepare(input) as FrameEntry;
}

export function clampPage(opts: { after?: number; limit?: number }) {
  const after = Math.max(-1, Math.floor(opts.after ?? -1));
  const limit = Math.min(TRACE_PAGE_MAX, Math.max(1, Math.floor(opts.limit ?? TRACE_PAGE_DEFAULT)));
  return { after, limit };
}

export function boundedSet<K, V>(map: Map<K, V>, key: K, value: V) {
  map.delete(key);
  map.set(key, value);
  while (map.size > CACHE_MAX) map.delete(map.keys().next().value as K);
}

/** The box rows (id → removed_at_ms) of some traces, to find traces of boxes removed long ago. */
export async function boxRemovals(ids: string[]): Promise<Map<string, number | null>> {
  const out = new Map<string, number | null>();
  for (let i = 0; i < ids.length; i += INSERT_CHUNK) {
    const rows = await db()
      .selectFrom("box")
      .select(["id", "removed_at_ms"])
      .where("id", "in", ids.slice(i, i + INSERT_CHUNK))
      .execute();
    for (const r of rows) out.set(r.id, r.removed_at_ms === null ? null : Number(r.removed_at_ms));
  }
  return out;
}

/** A page of a box's trace from the store's rows: the same query on every SQL store. */
export async function readTracePage(boxId: string, opts: { after: number; limit: number }): Promise<TracePage> {
  const { after, limit } = clampPage(opts);
  const rows = await db()
    .selectFrom("trace_entry")
    .select(["seq", "at_ms", "actor", "event", "screen", "frame", "data_json"])
    .where("box_id", "=", boxId)
    .where("seq", ">", after)
    .orderBy("seq")
    .limit(limit + 1)
    .execute();
  const more = rows.length > limit;
  const entries = (more ? rows.slice(0, limit) : rows).map((r) => {
    const e: TraceEntry = { seq: Number(r.seq), at_ms: Number(r.at_ms), actor: r.actor as TraceActor, event: r.event };
    if (r.screen !== null) e.screen = r.screen;
    if (r.frame !== null) e.frame = r.frame;
    if (r.data_json !== null) e.data = JSON.parse(r.data_json);
    return e;
  });
  return { entries, next: more ? entries[entries.length - 1]!.seq : null };
}

/** The frame's hash when an entry of this box names it (a box reads only its own frames). */
export async function frameOfBox(boxId: string, hash: string): Promise<string | undefined> {
  const h = frameHash(hash);
  if (!h) return undefined;
  const ref = await db().selectFrom("trace_entry").select("seq").where("frame", "=", h).where("box_id", "=", boxId).limit(1).executeTakeFirst();
  return ref ? h : undefined;
}
