import type { FrameEntry, Prepared, PruneCutoffs, PruneResult, StoredFrame, TraceEntry, TraceEntryInput, TracePage, TraceStore } from "./trace-types.server";
import { MEMORY_MAX_BOXES, MEMORY_MAX_ENTRIES_PER_BOX, MEMORY_MAX_FRAMES_PER_BOX, boundedSet, boxRemovals } from "./trace-types.server";
import { clampPage, frameHash, makeEntry, prepare } from "./trace-types.server";

// The memory trace store (HOLM_STORAGE_BACKEND=memory): capped traces in plain structures,
// lost at a restart.

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

  /** Entries and frame bytes held (for the trace store size metric). */
  size(): { entries: number; frameBytes: number } {
    let entries = 0;
    for (const t of this.traces.values()) entries += t.entries.length - t.head;
    let frameBytes = 0;
    for (const b of this.blobs.values()) frameBytes += b.png.length;
    return { entries, frameBytes };
  }

  async recordEntries(boxId: string, inputs: TraceEntryInput[]): Promise<TraceEntry[]> {
    return this.record(boxId, inputs.map(prepare));
  }

  async recordFrameIfChanged(boxId: string, p: FrameEntry): Promise<TraceEntry | undefined> {
    // Synchronous from the check to the write, so two concurrent calls cannot both record.
    if (this.traces.get(boxId)?.lastFrame.get(p.screen) === p.frame.hash) return undefined;
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

  private holdFrame(t: MemTrace, frame: StoredFrame, at: number) {
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

  async prune(cutoff: PruneCutoffs): Promise<PruneResult> {
    let frames = 0;
    let entries = 0;
    let boxes = 0;
    for (const t of this.traces.values()) frames += this.releaseFramesBefore(t, cutoff.frames);
    for (const t of this.traces.values()) {
      const start = t.head;
      while (t.head < t.entries.length && t.entries[t.head]!.at_ms < cutoff.entries) t.head++;
      entries += t.head - start;
      // No entry at or after the cutoff refers to a frame last referred to before it.
      frames += this.releaseFramesBefore(t, cutoff.entries);
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
      if (removedAt === null || removedAt >= cutoff.removed) continue;
      const gone = this.dropTrace(id, false);
      entries += gone.entries;
      frames += gone.frames;
      boxes++;
    }
    return { frames, entries, boxes };
  }
}
