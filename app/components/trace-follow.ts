import { type RefObject, useCallback, useEffect, useLayoutEffect, useMemo, useRef } from "react";
import { type FrameRef, lastAtOrBefore } from "~/models/trace-summary";
import type { FrameCache } from "./frame-cache";
import type { FrameHandle } from "./trace-frames";
import { STRIP_SIDE } from "./trace-scrubber";

// What the trace page shows and loads as its slider moves: the frame under it at once, then the
// frames it will be on by the time they arrive (from how fast and how often it moves), then the
// filmstrip's, and while it rests the bytes of a wide ring around it. Its own module because it
// is the page's one timing-sensitive path (no React render on it) and its policy (framesToWant)
// is pure, to read and test alone; the cache (frame-cache.ts) only does what it is told.

/** Frames either side of a resting slider whose bytes load in the background. */
const PREFETCH_RING = 128;

export interface Motion {
  /** +1 forward, -1 back. */
  dir: number;
  /** Entries per move of the slider, smoothed. */
  step: number;
  /** Moves of the slider that pass while a frame loads (0: it is standing still). */
  lead: number;
}

/**
 * The frames to load for the slider at entry `at`, most wanted first. Standing still: the frame
 * there, then its neighbours. Moving: the frames it will be on when they arrive (it moves `step`
 * entries a move and a load takes `lead` moves) and the next dozen moves on, then the one there.
 */
export function framesToWant(frames: readonly { seq: number; hash: string }[], at: number, m: Motion): string[] {
  const out: string[] = [];
  const seen = new Set<number>();
  const add = (i: number) => {
    if (i < 0 || i >= frames.length || seen.has(i)) return;
    seen.add(i);
    out.push(frames[i]!.hash);
  };
  const index = lastAtOrBefore(frames, at);
  const dir = m.dir || 1;
  const lead = Math.max(0, Math.min(8, Math.round(m.lead)));
  if (lead > 0) {
    for (let k = lead; k <= lead + 12; k++) {
      const pos = at + dir * k * m.step;
      const i = lastAtOrBefore(frames, pos);
      add(i);
      // Near the edge of a frame, a move a little shorter or longer lands on the neighbour.
      const from = i >= 0 ? frames[i]!.seq : -Infinity;
      const to = i + 1 < frames.length ? frames[i + 1]!.seq : Infinity;
      const frac = (pos - from) / (to - from);
      if (frac < 0.2) add(i - 1);
      else if (frac > 0.8) add(i + 1);
    }
  }
  add(index);
  for (let k = 1; k < lead; k++) add(lastAtOrBefore(frames, at + dir * k * m.step));
  for (let k = 1; k <= 2; k++) add(index + dir * k);
  for (let k = 1; k <= 3; k++) add(index - dir * k);
  return out;
}

/** The hashes of the frames within `side` of frame `i`, nearest first. */
function ring(frames: readonly { hash: string }[], i: number, side: number): string[] {
  const out: string[] = [];
  for (let d = 1; d <= side; d++) {
    if (i + d < frames.length) out.push(frames[i + d]!.hash);
    if (i - d >= 0) out.push(frames[i - d]!.hash);
  }
  return out;
}

/**
 * Drives the frame view and the cache from the slider. `scrub` is where the slider is (it runs
 * ahead of the page's selected entry), `index` the frame at the selected entry (the filmstrip is
 * around it). Returns `follow(at)`, to call on every move of the slider.
 */
export function useFrameFollow({
  frames,
  index,
  cache,
  view,
  scrub,
}: {
  frames: FrameRef[];
  index: number;
  cache: FrameCache | undefined;
  view: RefObject<FrameHandle | null>;
  scrub: RefObject<number>;
}): (at: number) => void {
  const hashes = useMemo(() => frames.map((f) => f.hash), [frames]);
  const latest = useRef({ frames, cache });
  latest.current = { frames, cache };
  const motion = useRef({ prev: scrub.current, dir: 1, step: 1, lead: 0, at: 0, every: 500, settle: 0, rested: false });
  /** The filmstrip's frames (around the selected entry, not the moving slider): loaded last, with thumbnails. */
  const strip = useRef<string[]>([]);
  const follow = useCallback((at: number) => {
    const { frames, cache } = latest.current;
    const i = lastAtOrBefore(frames, at);
    view.current?.show(i >= 0 ? frames[i]!.hash : undefined);
    if (!cache || frames.length === 0) return;
    const m = motion.current;
    const d = at - m.prev;
    const t = performance.now();
    if (d !== 0) {
      m.dir = Math.sign(d);
      m.step = m.at ? m.step * 0.7 + Math.abs(d) * 0.3 : Math.abs(d);
      // How many moves a load spans, from how often it moves.
      m.every = m.every * 0.7 + Math.min(500, t - m.at) * 0.3;
      m.lead = m.every < 250 ? cache.latencyMs / m.every : 0;
      m.at = t;
      // Moving: no background loads in the way of the frames it asks for.
      if (m.rested) cache.prefetch([]);
    }
    m.prev = at;
    cache.want([...framesToWant(frames, at, m), ...strip.current], strip.current);
    // Once it stands still, the frame under it comes first, and the bytes of the frames around
    // it load while the page is idle.
    if (d === 0 && m.rested) return;
    m.rested = false;
    clearTimeout(m.settle);
    m.settle = window.setTimeout(
      () => {
        const { frames, cache } = latest.current;
        m.lead = 0;
        m.every = 500;
        m.rested = true;
        if (!cache) return;
        const here = scrub.current;
        cache.want([...framesToWant(frames, here, m), ...strip.current], strip.current);
        cache.prefetch(ring(frames, Math.max(0, lastAtOrBefore(frames, here)), PREFETCH_RING));
      },
      m.lead > 0 ? 120 : 300,
    );
    // `view` and `scrub` are refs: the same objects for the page's life.
  }, []);
  useLayoutEffect(() => {
    const c = Math.max(0, index);
    strip.current = hashes.slice(Math.max(0, c - STRIP_SIDE), c + STRIP_SIDE + 1);
    follow(scrub.current);
  }, [follow, hashes, cache, index]);
  useEffect(() => () => clearTimeout(motion.current.settle), []);
  return follow;
}
