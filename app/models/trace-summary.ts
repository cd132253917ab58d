// The shape of a trace that the console's trace page needs without loading every entry: where it
// starts and ends, every frame entry (for the scrubber and the filmstrip), the takeover periods
// (shaded) and the desktop size. Built on the server by folding the trace page by page, and
// extended in the browser by folding the entries that arrive later. Pure: no store, no DOM.

import type { TraceActor, TraceEntry, TracePage } from "./trace.server";

export type { TraceActor, TraceEntry, TracePage };

export interface FrameRef {
  seq: number;
  at_ms: number;
  hash: string;
  screen: number;
  actor: TraceActor;
}

/** A person held `screen` from entry `from` (takeover_started) to `to` (takeover_ended; null: still). */
export interface TakeoverSpan {
  screen: number;
  from: number;
  to: number | null;
}

/**
 * A screen recording from entry `from` (recording_started) to `to` (recording_stopped; null:
 * still running). `started_at_ms` is the video's first frame; `id` is set once the file is kept.
 */
export interface RecordingSpan {
  screen: number;
  from: number;
  to: number | null;
  started_at_ms: number;
  stopped_at_ms: number | null;
  id: string | null;
}

export interface TraceSummary {
  /** Seq of the first entry still kept, or null for an empty trace. */
  first: number | null;
  last: number | null;
  first_ms: number | null;
  last_ms: number | null;
  frames: FrameRef[];
  takeovers: TakeoverSpan[];
  recordings: RecordingSpan[];
  width: number | null;
  height: number | null;
  screens: number;
  /** The trace recorded `gone`: nothing more will come. */
  ended: boolean;
}

/** Entries per page, as the trace API serves them at most. */
export const PAGE_SIZE = 500;

export function emptySummary(): TraceSummary {
  return { first: null, last: null, first_ms: null, last_ms: null, frames: [], takeovers: [], recordings: [], width: null, height: null, screens: 1, ended: false };
}

/** A copy that folding can change without touching the original (React state). */
export function cloneSummary(s: TraceSummary): TraceSummary {
  return { ...s, frames: s.frames.slice(), takeovers: s.takeovers.map((t) => ({ ...t })), recordings: s.recordings.map((r) => ({ ...r })) };
}

/** Adds entries (in seq order, all after `s.last`) to the summary, in place. */
export function foldEntries(s: TraceSummary, entries: readonly TraceEntry[]): TraceSummary {
  for (const e of entries) {
    if (s.last !== null && e.seq <= s.last) continue;
    if (s.first === null) {
      s.first = e.seq;
      s.first_ms = e.at_ms;
    }
    s.last = e.seq;
    s.last_ms = e.at_ms;
    const screen = e.screen ?? 0;
    if (screen + 1 > s.screens) s.screens = screen + 1;
    switch (e.event) {
      case "frame":
        if (e.frame) s.frames.push({ seq: e.seq, at_ms: e.at_ms, hash: e.frame, screen, actor: e.actor });
        break;
      case "takeover_started":
        if (!s.takeovers.some((t) => t.screen === screen && t.to === null)) s.takeovers.push({ screen, from: e.seq, to: null });
        break;
      case "takeover_ended": {
        const open = s.takeovers.find((t) => t.screen === screen && t.to === null);
        if (open) open.to = e.seq;
        break;
      }
      case "recording_started": {
        const t0 = typeof e.data?.started_at_ms === "number" ? e.data.started_at_ms : e.at_ms;
        s.recordings.push({ screen, from: e.seq, to: null, started_at_ms: t0, stopped_at_ms: null, id: null });
        break;
      }
      case "recording_stopped": {
        const t0 = typeof e.data?.started_at_ms === "number" ? e.data.started_at_ms : e.at_ms;
        // Its start may be pruned or from before an adoption: the stop alone still names the file.
        let open = s.recordings.find((r) => r.screen === screen && r.to === null);
        if (!open) s.recordings.push((open = { screen, from: e.seq, to: null, started_at_ms: t0, stopped_at_ms: null, id: null }));
        open.to = e.seq;
        open.stopped_at_ms = e.at_ms;
        open.id = typeof e.data?.recording === "string" ? e.data.recording : null;
        break;
      }
      case "box_created":
      case "adopted": {
        const desktop = (e.data?.spec as { desktop?: { width?: unknown; height?: unknown; screens?: unknown } } | undefined)?.desktop;
        if (typeof desktop?.width === "number") s.width = desktop.width;
        if (typeof desktop?.height === "number") s.height = desktop.height;
        if (typeof desktop?.screens === "number" && desktop.screens > s.screens) s.screens = desktop.screens;
        break;
      }
      case "gone":
        s.ended = true;
        break;
    }
  }
  return s;
}

/** Index of the last item with seq ≤ `seq` in a list sorted by seq, or -1. */
export function lastAtOrBefore<T extends { seq: number }>(list: readonly T[], seq: number): number {
  let lo = 0;
  let hi = list.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]!.seq <= seq) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/** The page (of PAGE_SIZE entries, counted from the first entry) that holds `seq`. */
export function pageOf(seq: number, first: number): number {
  return Math.max(0, Math.floor((seq - first) / PAGE_SIZE));
}

/** The `after` that reads page `index`. */
export function pageAfter(index: number, first: number): number {
  return first + index * PAGE_SIZE - 1;
}

/** The recording that covers `seq` on `screen`, if any (the latest, should two). */
export function recordingAt(spans: readonly RecordingSpan[], screen: number, seq: number): RecordingSpan | undefined {
  return spans.findLast((r) => r.screen === screen && seq >= r.from && (r.to === null || seq <= r.to));
}

/** A takeover span covering `seq` on `screen`, if any. */
export function takeoverAt(spans: readonly TakeoverSpan[], screen: number, seq: number): TakeoverSpan | undefined {
  return spans.find((t) => t.screen === screen && seq >= t.from && (t.to === null || seq <= t.to));
}
