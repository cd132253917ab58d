import { memo, useLayoutEffect, useRef } from "react";
import type { FrameRef, TakeoverSpan } from "~/models/trace-summary";
import { takeoverAt } from "~/models/trace-summary";
import type { FrameCache } from "./frame-cache";
import { clock } from "./trace-describe";
import { ThumbCanvas } from "./trace-frames";

// The slider over every entry of the trace (takeover periods shaded on its track, a tick per
// frame) and the filmstrip of the frames around the selected one.

const fmt = (n: number) => n.toLocaleString("en-US");

/** Where a seq sits along the track, 0–100 (%). */
function pct(seq: number, first: number, last: number): number {
  return last > first ? ((seq - first) / (last - first)) * 100 : 0;
}

const MAX_TICKS = 1500;

/** The track: takeover periods and frame ticks (redrawn only when they change, not as the slider moves). */
const Track = memo(function Track({
  first,
  last,
  frames,
  takeovers,
}: {
  first: number;
  last: number;
  frames: readonly FrameRef[];
  takeovers: readonly TakeoverSpan[];
}) {
  return (
    // Inset by half the thumb, so positions line up with the thumb's centre.
    <div aria-hidden className="absolute inset-x-2 top-1/2 h-3 -translate-y-1/2 overflow-hidden rounded-full bg-slate-200">
      {takeovers.map((t) => {
        const left = pct(t.from, first, last);
        const right = pct(t.to ?? last, first, last);
        return (
          <div
            key={`${t.screen}-${t.from}`}
            data-testid="takeover-shade"
            title={`A person had the screen from entry ${t.from}${t.to !== null ? ` to ${t.to}` : ""}`}
            className="absolute inset-y-0 bg-amber-400"
            style={{ left: `${left}%`, width: `max(${right - left}%, 3px)` }}
          />
        );
      })}
      {frames.length <= MAX_TICKS
        ? frames.map((f) => <div key={f.seq} className="absolute inset-y-0 w-px bg-slate-500/60" style={{ left: `${pct(f.seq, first, last)}%` }} />)
        : null}
    </div>
  );
});

/**
 * The slider over every entry. It is not a controlled input: while it moves, `onScrub` gets every
 * position (to move the frame at once) and the page catches up with `seq` a few times a second;
 * `seq` moves the thumb only when the change came from elsewhere (keys on the page, the timeline).
 */
export function Scrubber({
  first,
  last,
  seq,
  textFor,
  frames,
  takeovers,
  onScrub,
}: {
  first: number;
  last: number;
  seq: number;
  textFor: (seq: number) => string;
  frames: readonly FrameRef[];
  takeovers: readonly TakeoverSpan[];
  onScrub: (seq: number) => void;
}) {
  const input = useRef<HTMLInputElement>(null);
  const movedAt = useRef(-Infinity);
  const latest = useRef({ seq, textFor });
  latest.current = { seq, textFor };
  useLayoutEffect(() => {
    const el = input.current;
    if (!el) return;
    // The thumb follows the page's entry, except while a person moves it (their own value is
    // newer). An entry chosen elsewhere (keys on the page, the timeline) in that window is
    // applied once it ends: nothing else may re-render, and the thumb would stay behind.
    const sync = () => {
      const { seq, textFor } = latest.current;
      if (Number(el.value) !== seq && performance.now() - movedAt.current > 300) el.value = String(seq);
      el.setAttribute("aria-valuetext", textFor(Number(el.value)));
    };
    sync();
    if (Number(el.value) === seq) return;
    const t = window.setTimeout(sync, Math.max(0, 300 - (performance.now() - movedAt.current)) + 20);
    return () => clearTimeout(t);
  });
  return (
    <div>
      <div className="relative h-9">
        <Track first={first} last={last} frames={frames} takeovers={takeovers} />
        <input
          ref={input}
          type="range"
          aria-label="Trace position"
          aria-valuetext={textFor(seq)}
          data-testid="trace-slider"
          min={first}
          max={last}
          step={1}
          defaultValue={seq}
          disabled={last <= first}
          onChange={(e) => {
            const el = e.currentTarget;
            const n = Number(el.value);
            movedAt.current = performance.now();
            el.setAttribute("aria-valuetext", textFor(n));
            onScrub(n);
          }}
          className="absolute inset-0 h-full w-full cursor-pointer appearance-none bg-transparent focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-indigo-600 disabled:cursor-default [&::-moz-range-thumb]:h-5 [&::-moz-range-thumb]:w-4 [&::-moz-range-thumb]:rounded-md [&::-moz-range-thumb]:border-2 [&::-moz-range-thumb]:border-white [&::-moz-range-thumb]:bg-indigo-600 [&::-moz-range-track]:bg-transparent [&::-webkit-slider-runnable-track]:bg-transparent [&::-webkit-slider-thumb]:h-5 [&::-webkit-slider-thumb]:w-4 [&::-webkit-slider-thumb]:appearance-none [&::-webkit-slider-thumb]:rounded-md [&::-webkit-slider-thumb]:border-2 [&::-webkit-slider-thumb]:border-white [&::-webkit-slider-thumb]:bg-indigo-600 [&::-webkit-slider-thumb]:shadow"
        />
      </div>
      <div className="mt-1 flex flex-wrap items-center justify-between gap-2 text-xs text-slate-500">
        <span>
          entry {fmt(seq)} · {fmt(seq - first + 1)} of {fmt(last - first + 1)}
        </span>
        <span className="flex items-center gap-3">
          {takeovers.length ? (
            <span className="flex items-center gap-1">
              <span aria-hidden className="inline-block h-2.5 w-4 rounded-sm bg-amber-400" /> a person had the screen
            </span>
          ) : null}
          <span className="flex items-center gap-1">
            <span aria-hidden className="inline-block h-2.5 w-px bg-slate-500" /> a frame
          </span>
        </span>
      </div>
    </div>
  );
}

/** Frames either side of the selected one in the filmstrip. */
export const STRIP_SIDE = 5;

export function Filmstrip({
  frames,
  index,
  takeovers,
  cache,
  onSeq,
}: {
  frames: readonly FrameRef[];
  index: number;
  takeovers: readonly TakeoverSpan[];
  cache: FrameCache | undefined;
  onSeq: (seq: number) => void;
}) {
  if (frames.length === 0) return null;
  const centre = Math.max(0, index);
  const lo = Math.max(0, Math.min(centre - STRIP_SIDE, frames.length - 1 - 2 * STRIP_SIDE));
  const hi = Math.min(frames.length - 1, lo + 2 * STRIP_SIDE);
  const shown = frames.slice(lo, hi + 1);
  const step = (d: number) => {
    const next = frames[Math.min(frames.length - 1, Math.max(0, index + d))];
    if (next) onSeq(next.seq);
  };
  return (
    <div className="flex items-stretch gap-2">
      <button
        type="button"
        onClick={() => step(-1)}
        disabled={index <= 0}
        aria-label="Previous frame"
        className="shrink-0 rounded-md px-2 text-slate-600 ring-1 ring-slate-300 hover:bg-slate-100 disabled:opacity-40"
      >
        ‹
      </button>
      <ol aria-label={`Frames ${fmt(lo + 1)}–${fmt(hi + 1)} of ${fmt(frames.length)}`} className="grid min-w-0 flex-1 grid-cols-5 gap-1.5 sm:grid-cols-11">
        {shown.map((f, k) => {
          const i = lo + k;
          const held = takeoverAt(takeovers, f.screen, f.seq);
          const current = i === index;
          // Narrow screens show the nearest five.
          const far = Math.abs(i - centre) > 2;
          return (
            <li key={f.hash + f.seq} className={far ? "hidden sm:block" : ""}>
              <button
                type="button"
                onClick={() => onSeq(f.seq)}
                aria-pressed={current}
                aria-label={`Frame ${fmt(i + 1)}: entry ${fmt(f.seq)}, ${clock(f.at_ms)}${held ? ", a person had the screen" : ""}`}
                data-testid="filmstrip-frame"
                data-seq={f.seq}
                data-takeover={held ? "true" : undefined}
                className={`block w-full overflow-hidden rounded-md p-0.5 ${held ? "bg-amber-300" : "bg-slate-200"} ${current ? "outline-3 outline-indigo-600" : "hover:outline-2 hover:outline-slate-400"}`}
              >
                <span className="block aspect-[16/10] overflow-hidden rounded-sm">
                  <ThumbCanvas cache={cache} hash={f.hash} />
                </span>
                <span className={`block truncate text-center text-[10px] tabular-nums ${held ? "text-amber-950" : "text-slate-600"}`}>{f.seq}</span>
              </button>
            </li>
          );
        })}
      </ol>
      <button
        type="button"
        onClick={() => step(1)}
        disabled={index >= frames.length - 1}
        aria-label="Next frame"
        className="shrink-0 rounded-md px-2 text-slate-600 ring-1 ring-slate-300 hover:bg-slate-100 disabled:opacity-40"
      >
        ›
      </button>
    </div>
  );
}
