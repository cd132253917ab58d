import { randomBytes } from "node:crypto";
import fsp from "node:fs/promises";
import path from "node:path";
import { sql } from "kysely";
import { notFound } from "~/utils/api-error.server";
import type { Actor } from "~/utils/auth.server";
import { db } from "~/utils/db.server";
import { env } from "~/utils/env.server";

// The trace: what was done to each box, in order. Two stores behind one interface, chosen by
// HOLM_STORAGE_BACKEND: `memory` keeps capped traces in plain structures (lost at a restart);
// `local` keeps entries in the SQLite store and frame PNGs as files under
// $HOLM_STATE_DIR/frames/<aa>/<hash>.png. Either way a trace outlives its box until pruned.

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

/** A frame as the in-box agent gives it: a hex content hash (sha1 of raw pixels) and the PNG. */
export interface FrameInput {
  hash: string;
  png: Buffer;
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

export interface TraceStore {
  readonly kind: "memory" | "local";
  recordEntries(boxId: string, entries: TraceEntryInput[]): Promise<TraceEntry[]>;
  recordFrameIfChanged(
    boxId: string,
    screen: number,
    actor: TraceActor,
    frame: FrameInput,
    data?: Record<string, unknown>,
  ): Promise<TraceEntry | undefined>;
  readTrace(boxId: string, opts: { after: number; limit: number }): Promise<TracePage>;
  readFrame(hash: string): Promise<Buffer | undefined>;
  readBoxFrame(boxId: string, hash: string): Promise<Buffer | undefined>;
  hasTrace(boxId: string): Promise<boolean>;
  prune(opts: Required<PruneOptions>): Promise<PruneResult>;
}

export const MEMORY_MAX_ENTRIES_PER_BOX = 10_000;
export const MEMORY_MAX_FRAMES_PER_BOX = 256;
export const MEMORY_MAX_BOXES = 256;
export const TRACE_PAGE_MAX = 500;
export const TRACE_PAGE_DEFAULT = 100;
const DAY_MS = 86_400_000;
export const DEFAULT_MAX_FRAME_AGE_MS = 7 * DAY_MS;
export const DEFAULT_MAX_ENTRY_AGE_MS = 30 * DAY_MS;

const ACTORS: ReadonlySet<string> = new Set(["agent", "person", "server"]);
const HASH_RE = /^[0-9a-f]{16,128}$/;
const BOX_ID_RE = /^box_[0-9a-f]{8,64}$/;
/** Rows per INSERT, well under SQLite's bound-parameter limit. */
const INSERT_CHUNK = 500;
const PRUNE_CHUNK = 5000;
/** Bound on the per-box caches (they reload from the store on a miss). */
const CACHE_MAX = 4096;

/** A frame hash as stored (lowercase hex), or undefined if it cannot be one. */
export function frameHash(hash: string): string | undefined {
  const h = hash.toLowerCase();
  return HASH_RE.test(h) ? h : undefined;
}

interface Prepared {
  actor: TraceActor;
  event: string;
  screen?: number;
  at_ms?: number;
  frame?: FrameInput;
  data_json?: string;
}

function prepare(e: TraceEntryInput): Prepared {
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
    const hash = frameHash(e.frame.hash);
    if (!hash) throw new Error(`trace: a frame hash must be 16 to 128 hex digits`);
    if (!(e.frame.png instanceof Uint8Array) || e.frame.png.length === 0) throw new Error("trace: a frame needs PNG bytes");
    p.frame = { hash, png: e.frame.png };
  }
  if (e.data !== undefined) p.data_json = JSON.stringify(e.data);
  return p;
}

function makeEntry(seq: number, at_ms: number, p: Prepared): TraceEntry {
  const e: TraceEntry = { seq, at_ms, actor: p.actor, event: p.event };
  if (p.screen !== undefined) e.screen = p.screen;
  if (p.frame) e.frame = p.frame.hash;
  if (p.data_json !== undefined) e.data = JSON.parse(p.data_json);
  return e;
}

function frameEntry(screen: number, actor: TraceActor, frame: FrameInput, data?: Record<string, unknown>) {
  const input: TraceEntryInput = { actor, event: "frame", screen, frame };
  if (data) input.data = data;
  return prepare(input);
}

function clampPage(opts: { after?: number; limit?: number }) {
  const after = Math.max(-1, Math.floor(opts.after ?? -1));
  const limit = Math.min(TRACE_PAGE_MAX, Math.max(1, Math.floor(opts.limit ?? TRACE_PAGE_DEFAULT)));
  return { after, limit };
}

function boundedSet<K, V>(map: Map<K, V>, key: K, value: V) {
  map.delete(key);
  map.set(key, value);
  while (map.size > CACHE_MAX) map.delete(map.keys().next().value as K);
}

/** The box rows (id → removed_at_ms) of some traces, to find traces of boxes removed long ago. */
async function boxRemovals(ids: string[]): Promise<Map<string, number | null>> {
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

// ---------------------------------------------------------------------------------------------
// memory

interface MemTrace {
  nextSeq: number;
  lastAt: number;
  /** Gap-free by seq from `head` on; slots before `head` are dropped and compacted away later. */
  entries: TraceEntry[];
  head: number;
  /** hash → when an entry of this trace last referred to it; oldest first. */
  frames: Map<string, number>;
  /** screen → hash of the last frame entry on it. */
  lastFrame: Map<number, string>;
}

export class MemoryTraceStore implements TraceStore {
  readonly kind = "memory" as const;
  /** Least recently written first; the box cap drops from the front. */
  private traces = new Map<string, MemTrace>();
  /** The PNG bytes, once per hash; refs counts the traces that hold the hash. */
  private blobs = new Map<string, { png: Buffer; refs: number }>();
  /** Next seq of traces dropped by the box cap, so a box that records again does not restart at 0. */
  private dropped = new Map<string, number>();

  async recordEntries(boxId: string, inputs: TraceEntryInput[]): Promise<TraceEntry[]> {
    return this.record(boxId, inputs.map(prepare));
  }

  async recordFrameIfChanged(
    boxId: string,
    screen: number,
    actor: TraceActor,
    frame: FrameInput,
    data?: Record<string, unknown>,
  ): Promise<TraceEntry | undefined> {
    const p = frameEntry(screen, actor, frame, data);
    // Synchronous from the check to the write, so two concurrent calls cannot both record.
    if (this.traces.get(boxId)?.lastFrame.get(screen) === p.frame!.hash) return undefined;
    return this.record(boxId, [p])[0];
  }

  private record(boxId: string, items: Prepared[]): TraceEntry[] {
    if (items.length === 0) return [];
    let t = this.traces.get(boxId);
    if (t) {
      this.traces.delete(boxId);
      this.traces.set(boxId, t);
    } else {
      t = { nextSeq: this.dropped.get(boxId) ?? 0, lastAt: 0, entries: [], head: 0, frames: new Map(), lastFrame: new Map() };
      this.dropped.delete(boxId);
      this.traces.set(boxId, t);
      while (this.traces.size > MEMORY_MAX_BOXES) this.dropTrace(this.traces.keys().next().value as string, true);
    }
    const now = Date.now();
    const out: TraceEntry[] = [];
    for (const p of items) {
      const at = Math.max(p.at_ms ?? now, t.lastAt);
      const entry = Object.freeze(makeEntry(t.nextSeq++, at, p));
      t.lastAt = at;
      if (p.frame) {
        this.holdFrame(t, p.frame, at);
        t.lastFrame.set(p.screen ?? -1, p.frame.hash);
      }
      t.entries.push(entry);
      out.push(entry);
    }
    const live = t.entries.length - t.head;
    if (live > MEMORY_MAX_ENTRIES_PER_BOX) {
      t.head += live - MEMORY_MAX_ENTRIES_PER_BOX;
      // Frames that only the dropped entries referred to go with them.
      this.releaseFramesBefore(t, t.entries[t.head]!.at_ms);
      this.compact(t);
    }
    return out;
  }

  private holdFrame(t: MemTrace, frame: FrameInput, at: number) {
    const had = t.frames.delete(frame.hash);
    t.frames.set(frame.hash, at);
    if (!had) {
      const blob = this.blobs.get(frame.hash);
      if (blob) blob.refs++;
      else this.blobs.set(frame.hash, { png: Buffer.from(frame.png), refs: 1 });
    }
    while (t.frames.size > MEMORY_MAX_FRAMES_PER_BOX) {
      const oldest = t.frames.keys().next().value as string;
      t.frames.delete(oldest);
      this.release(oldest);
    }
  }

  /** Drops one hold on a blob; 1 when that removed the blob. */
  private release(hash: string): number {
    const blob = this.blobs.get(hash);
    if (!blob) return 0;
    if (--blob.refs > 0) return 0;
    this.blobs.delete(hash);
    return 1;
  }

  private releaseFramesBefore(t: MemTrace, cutoff: number): number {
    let removed = 0;
    for (const [hash, at] of t.frames) {
      if (at >= cutoff) break;
      t.frames.delete(hash);
      removed += this.release(hash);
    }
    return removed;
  }

  private compact(t: MemTrace) {
    if (t.head > 1024 && t.head * 2 > t.entries.length) {
      t.entries = t.entries.slice(t.head);
      t.head = 0;
    }
  }

  /** Removes a whole trace; returns the entries and blobs that went with it. */
  private dropTrace(boxId: string, remember: boolean): { entries: number; frames: number } {
    const t = this.traces.get(boxId);
    if (!t) return { entries: 0, frames: 0 };
    let frames = 0;
    for (const hash of t.frames.keys()) frames += this.release(hash);
    this.traces.delete(boxId);
    if (remember) boundedSet(this.dropped, boxId, t.nextSeq);
    return { entries: t.entries.length - t.head, frames };
  }

  async readTrace(boxId: string, opts: { after: number; limit: number }): Promise<TracePage> {
    const { after, limit } = clampPage(opts);
    const t = this.traces.get(boxId);
    if (!t || t.head >= t.entries.length) return { entries: [], next: null };
    const firstSeq = t.entries[t.head]!.seq;
    const from = t.head + Math.max(0, after + 1 - firstSeq);
    const entries = t.entries.slice(from, from + limit);
    const more = from + limit < t.entries.length;
    return { entries, next: more ? entries[entries.length - 1]!.seq : null };
  }

  async readFrame(hash: string): Promise<Buffer | undefined> {
    const h = frameHash(hash);
    return h ? this.blobs.get(h)?.png : undefined;
  }

  async readBoxFrame(boxId: string, hash: string): Promise<Buffer | undefined> {
    const h = frameHash(hash);
    if (!h || !this.traces.get(boxId)?.frames.has(h)) return undefined;
    return this.blobs.get(h)?.png;
  }

  async hasTrace(boxId: string): Promise<boolean> {
    return this.traces.has(boxId) || this.dropped.has(boxId);
  }

  async prune(o: Required<PruneOptions>): Promise<PruneResult> {
    const frameCutoff = o.now - o.maxFrameAgeMs;
    const entryCutoff = o.now - o.maxEntryAgeMs;
    const removedCutoff = o.now - o.maxRemovedAgeMs;
    let frames = 0;
    let entries = 0;
    let boxes = 0;
    for (const t of this.traces.values()) frames += this.releaseFramesBefore(t, frameCutoff);
    for (const t of this.traces.values()) {
      const start = t.head;
      while (t.head < t.entries.length && t.entries[t.head]!.at_ms < entryCutoff) t.head++;
      entries += t.head - start;
      // No entry at or after the cutoff refers to a frame last referred to before it.
      frames += this.releaseFramesBefore(t, entryCutoff);
      if (t.head === t.entries.length) {
        t.entries = [];
        t.head = 0;
      } else this.compact(t);
    }
    const ids = [...this.traces.keys()];
    const removals = await boxRemovals(ids);
    for (const id of ids) {
      const t = this.traces.get(id);
      if (!t) continue;
      // A trace whose box the store does not know counts as removed when it was last written.
      const removedAt = removals.has(id) ? removals.get(id)! : t.lastAt;
      if (removedAt === null || removedAt >= removedCutoff) continue;
      const gone = this.dropTrace(id, false);
      entries += gone.entries;
      frames += gone.frames;
      boxes++;
    }
    return { frames, entries, boxes };
  }
}

// ---------------------------------------------------------------------------------------------
// local

/**
 * Frame files against pruning: recording a frame (check the file, write it, commit the row)
 * holds the gate shared; deleting frame rows and files holds it alone.
 */
class FrameGate {
  private active = 0;
  private closed: Promise<void> | undefined;
  private drained: (() => void) | undefined;

  async shared<T>(fn: () => Promise<T>): Promise<T> {
    while (this.closed) await this.closed;
    this.active++;
    try {
      return await fn();
    } finally {
      if (--this.active === 0) this.drained?.();
    }
  }

  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    while (this.closed) await this.closed;
    let open!: () => void;
    this.closed = new Promise<void>((r) => (open = r));
    try {
      if (this.active > 0) await new Promise<void>((r) => (this.drained = r));
      this.drained = undefined;
      return await fn();
    } finally {
      this.closed = undefined;
      open();
    }
  }
}

interface Head {
  nextSeq: number;
  lastAt: number;
  startedAt: number;
}

export class LocalTraceStore implements TraceStore {
  readonly kind = "local" as const;
  /** Writes to one box's trace run one after another, so seq is gap-free and in order. */
  private chains = new Map<string, Promise<unknown>>();
  /** Cached trace rows (this process is the only writer). */
  private heads = new Map<string, Head>();
  /** box → screen → hash of its last frame entry. */
  private lastFrames = new Map<string, Map<number, string | null>>();
  private gate = new FrameGate();

  constructor(private readonly framesDir: string) {}

  private serial<T>(boxId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.chains.get(boxId) ?? Promise.resolve();
    const next = prev.catch(() => {}).then(fn);
    this.chains.set(boxId, next);
    void next
      .finally(() => {
        if (this.chains.get(boxId) === next) this.chains.delete(boxId);
      })
      .catch(() => {});
    return next;
  }

  framePath(hash: string): string {
    return path.join(this.framesDir, hash.slice(0, 2), `${hash}.png`);
  }

  private async head(boxId: string): Promise<Head> {
    const cached = this.heads.get(boxId);
    if (cached) return cached;
    const row = await db()
      .selectFrom("trace")
      .select(["next_seq", "last_at_ms", "started_at_ms"])
      .where("box_id", "=", boxId)
      .executeTakeFirst();
    const head = row
      ? { nextSeq: Number(row.next_seq), lastAt: Number(row.last_at_ms), startedAt: Number(row.started_at_ms) }
      : { nextSeq: 0, lastAt: 0, startedAt: 0 };
    boundedSet(this.heads, boxId, head);
    return head;
  }

  private async lastFrame(boxId: string, screen: number): Promise<string | null> {
    const screens = this.lastFrames.get(boxId);
    const cached = screens?.get(screen);
    if (cached !== undefined) return cached;
    const row = await db()
      .selectFrom("trace_entry")
      .select("frame")
      .where("box_id", "=", boxId)
      .where("screen", "=", screen)
      .where("frame", "is not", null)
      .orderBy("seq", "desc")
      .limit(1)
      .executeTakeFirst();
    const hash = row?.frame ?? null;
    this.rememberFrame(boxId, screen, hash);
    return hash;
  }

  private rememberFrame(boxId: string, screen: number, hash: string | null) {
    let screens = this.lastFrames.get(boxId);
    if (!screens) boundedSet(this.lastFrames, boxId, (screens = new Map()));
    screens.set(screen, hash);
  }

  async recordEntries(boxId: string, inputs: TraceEntryInput[]): Promise<TraceEntry[]> {
    const items = inputs.map(prepare);
    if (items.length === 0) return [];
    return this.serial(boxId, () => this.write(boxId, items));
  }

  async recordFrameIfChanged(
    boxId: string,
    screen: number,
    actor: TraceActor,
    frame: FrameInput,
    data?: Record<string, unknown>,
  ): Promise<TraceEntry | undefined> {
    const p = frameEntry(screen, actor, frame, data);
    return this.serial(boxId, async () => {
      if ((await this.lastFrame(boxId, screen)) === p.frame!.hash) return undefined;
      return (await this.write(boxId, [p]))[0];
    });
  }

  /** One transaction for the whole list: committed (WAL) before this resolves. */
  private async write(boxId: string, items: Prepared[]): Promise<TraceEntry[]> {
    const head = await this.head(boxId);
    const now = Date.now();
    let seq = head.nextSeq;
    let lastAt = head.lastAt;
    const rows: {
      box_id: string;
      seq: number;
      at_ms: number;
      actor: string;
      event: string;
      screen: number | null;
      frame: string | null;
      data_json: string | null;
    }[] = [];
    const out: TraceEntry[] = [];
    const frames = new Map<string, { png: Buffer; at: number }>();
    for (const p of items) {
      const at = Math.max(p.at_ms ?? now, lastAt);
      lastAt = at;
      rows.push({
        box_id: boxId,
        seq,
        at_ms: at,
        actor: p.actor,
        event: p.event,
        screen: p.screen ?? null,
        frame: p.frame?.hash ?? null,
        data_json: p.data_json ?? null,
      });
      if (p.frame) frames.set(p.frame.hash, { png: p.frame.png, at });
      out.push(makeEntry(seq++, at, p));
    }
    const startedAt = head.nextSeq === 0 ? rows[0]!.at_ms : head.startedAt;
    const commit = async () => {
      for (const [hash, f] of frames) await this.writeFrameFile(hash, f.png);
      await db()
        .transaction()
        .execute(async (trx) => {
          if (frames.size) {
            await trx
              .insertInto("trace_frame")
              .values([...frames].map(([hash, f]) => ({ hash, bytes: f.png.length, created_at_ms: f.at, last_ref_ms: f.at })))
              .onConflict((oc) =>
                oc.column("hash").doUpdateSet({
                  last_ref_ms: sql<number>`case when excluded.last_ref_ms > trace_frame.last_ref_ms then excluded.last_ref_ms else trace_frame.last_ref_ms end`,
                }),
              )
              .execute();
          }
          for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
            await trx.insertInto("trace_entry").values(rows.slice(i, i + INSERT_CHUNK)).execute();
          }
          await trx
            .insertInto("trace")
            .values({ box_id: boxId, next_seq: seq, started_at_ms: startedAt, last_at_ms: lastAt })
            .onConflict((oc) => oc.column("box_id").doUpdateSet({ next_seq: seq, last_at_ms: lastAt }))
            .execute();
        });
    };
    if (frames.size) await this.gate.shared(commit);
    else await commit();
    boundedSet(this.heads, boxId, { nextSeq: seq, lastAt, startedAt });
    for (const r of rows) if (r.frame) this.rememberFrame(boxId, r.screen ?? -1, r.frame);
    return out;
  }

  /** Stores the PNG once per hash: a temp file, fsync'd, renamed, so no reader sees a torn frame. */
  private async writeFrameFile(hash: string, png: Buffer) {
    const file = this.framePath(hash);
    try {
      await fsp.access(file);
      return;
    } catch {
      // not there yet
    }
    const dir = path.dirname(file);
    await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
    const tmp = path.join(dir, `.${hash}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
    try {
      const fh = await fsp.open(tmp, "wx", 0o600);
      try {
        await fh.writeFile(png);
        await fh.sync();
      } finally {
        await fh.close();
      }
      await fsp.rename(tmp, file);
    } catch (err) {
      await fsp.rm(tmp, { force: true }).catch(() => {});
      throw err;
    }
  }

  async readTrace(boxId: string, opts: { after: number; limit: number }): Promise<TracePage> {
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

  async readFrame(hash: string): Promise<Buffer | undefined> {
    const h = frameHash(hash);
    if (!h) return undefined;
    const row = await db().selectFrom("trace_frame").select("hash").where("hash", "=", h).executeTakeFirst();
    if (!row) return undefined;
    try {
      return await fsp.readFile(this.framePath(h));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw err;
    }
  }

  async readBoxFrame(boxId: string, hash: string): Promise<Buffer | undefined> {
    const h = frameHash(hash);
    if (!h) return undefined;
    const ref = await db()
      .selectFrom("trace_entry")
      .select("seq")
      .where("frame", "=", h)
      .where("box_id", "=", boxId)
      .limit(1)
      .executeTakeFirst();
    return ref ? this.readFrame(h) : undefined;
  }

  async hasTrace(boxId: string): Promise<boolean> {
    return (await this.head(boxId)).nextSeq > 0;
  }

  async prune(o: Required<PruneOptions>): Promise<PruneResult> {
    const frameCutoff = o.now - o.maxFrameAgeMs;
    const entryCutoff = o.now - o.maxEntryAgeMs;
    const removedCutoff = o.now - o.maxRemovedAgeMs;
    let frames = 0;
    let entries = 0;
    let boxes = 0;

    // 1. Frames no entry referred to for a while (the entries keep their hash).
    frames += await this.gate.exclusive(async () => {
      const gone = await db().deleteFrom("trace_frame").where("last_ref_ms", "<", frameCutoff).returning("hash").execute();
      await this.unlinkFrames(gone.map((r) => r.hash));
      return gone.length;
    });

    // 2. Old entries, a chunk at a time so writers get the store between chunks.
    for (;;) {
      const r = await sql`delete from trace_entry where (box_id, seq) in
        (select box_id, seq from trace_entry where at_ms < ${entryCutoff} limit ${PRUNE_CHUNK})`.execute(db());
      const n = Number(r.numAffectedRows ?? 0);
      entries += n;
      if (n < PRUNE_CHUNK) break;
    }

    // 3. Whole traces of boxes removed long ago (or that the store no longer knows).
    const dead = await db()
      .selectFrom("trace as t")
      .leftJoin("box as b", "b.id", "t.box_id")
      .select("t.box_id")
      .where((eb) =>
        eb.or([
          eb("b.removed_at_ms", "<", removedCutoff),
          eb.and([eb("b.id", "is", null), eb("t.last_at_ms", "<", removedCutoff)]),
        ]),
      )
      .execute();
    for (const { box_id } of dead) {
      entries += await this.serial(box_id, async () => {
        const n = await db()
          .transaction()
          .execute(async (trx) => {
            const r = await trx.deleteFrom("trace_entry").where("box_id", "=", box_id).executeTakeFirst();
            await trx.deleteFrom("trace").where("box_id", "=", box_id).execute();
            return Number(r.numDeletedRows);
          });
        this.heads.delete(box_id);
        this.lastFrames.delete(box_id);
        return n;
      });
      boxes++;
    }

    // 4. Frames no remaining entry refers to, and files a crash left behind.
    frames += await this.gate.exclusive(async () => {
      let n = 0;
      if (entries > 0) {
        const gone = await sql<{ hash: string }>`delete from trace_frame where not exists
          (select 1 from trace_entry e where e.frame = trace_frame.hash) returning hash`.execute(db());
        await this.unlinkFrames(gone.rows.map((r) => r.hash));
        n = gone.rows.length;
      }
      await this.sweepFiles();
      return n;
    });
    return { frames, entries, boxes };
  }

  private async unlinkFrames(hashes: string[]) {
    for (const h of hashes) await fsp.rm(this.framePath(h), { force: true });
  }

  /** Under the exclusive gate no frame write is in flight: temp files and unrecorded PNGs are leftovers. */
  private async sweepFiles() {
    let dirs: string[];
    try {
      dirs = await fsp.readdir(this.framesDir);
    } catch {
      return;
    }
    const known = new Set((await db().selectFrom("trace_frame").select("hash").execute()).map((r) => r.hash));
    for (const d of dirs) {
      if (!/^[0-9a-f]{2}$/.test(d)) continue;
      const dir = path.join(this.framesDir, d);
      for (const f of await fsp.readdir(dir).catch(() => [] as string[])) {
        const leftover = f.endsWith(".tmp") || (f.endsWith(".png") && !known.has(f.slice(0, -4)));
        if (leftover) await fsp.rm(path.join(dir, f), { force: true });
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// the module's API

let current: TraceStore | undefined;

/** The store HOLM_STORAGE_BACKEND names, made on first use. */
export function traceStore(): TraceStore {
  if (!current) {
    const e = env();
    current =
      e.HOLM_STORAGE_BACKEND === "local"
        ? new LocalTraceStore(path.join(e.HOLM_STATE_DIR, "frames"))
        : new MemoryTraceStore();
  }
  return current;
}

/** Appends one entry; seq is assigned in call order per box, without gaps. */
export async function recordEntry(boxId: string, entry: TraceEntryInput): Promise<TraceEntry> {
  return (await traceStore().recordEntries(boxId, [entry]))[0]!;
}

/** Appends several entries (the steps of one batch) in one write. */
export function recordEntries(boxId: string, entries: TraceEntryInput[]): Promise<TraceEntry[]> {
  return traceStore().recordEntries(boxId, entries);
}

/**
 * Records a `frame` entry when `frame.hash` differs from the last frame recorded for this box
 * and screen; a still screen adds nothing (undefined). The actor is the one holding the screen.
 */
export function recordFrameIfChanged(
  boxId: string,
  screen: number,
  actor: TraceActor,
  frame: FrameInput,
  data?: Record<string, unknown>,
): Promise<TraceEntry | undefined> {
  return traceStore().recordFrameIfChanged(boxId, screen, actor, frame, data);
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
  const maxEntryAgeMs = opts.maxEntryAgeMs ?? DEFAULT_MAX_ENTRY_AGE_MS;
  return traceStore().prune({
    now: opts.now ?? Date.now(),
    maxFrameAgeMs: opts.maxFrameAgeMs ?? DEFAULT_MAX_FRAME_AGE_MS,
    maxEntryAgeMs,
    maxRemovedAgeMs: opts.maxRemovedAgeMs ?? maxEntryAgeMs,
  });
}

export interface TraceBox {
  id: string;
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
        .select(["id", "owner", "state", "removed_at_ms"])
        .where("id", "=", id)
        .executeTakeFirst()
    : undefined;
  const owner = actor.kind === "workspace" ? actor.workspaceId : undefined;
  if (!row || (owner !== undefined && row.owner !== owner)) throw notFound(`no box ${id}`);
  return { id: row.id, owner: row.owner, removed: row.removed_at_ms !== null || row.state === "gone" };
}
