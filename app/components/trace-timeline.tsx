import { useEffect, useLayoutEffect, useReducer, useRef, useState } from "react";
import { type FrameRef, PAGE_SIZE, type TakeoverSpan, type TraceEntry, type TracePage, lastAtOrBefore, pageAfter, pageOf } from "~/models/trace-summary";
import { ActorBadge, clock, describeEntry } from "./trace-describe";

// The timeline: every entry of the trace in one scrolling list that renders only the rows in
// view and loads entries a page (500) at a time as they come into view or under the slider.

/** Entries loaded so far, by seq, and which pages were asked for. */
export class EntryStore {
  private entries = new Map<number, TraceEntry>();
  private pages = new Map<number, "loading" | "loaded">();
  private listeners = new Set<() => void>();

  constructor(
    private readonly entriesUrl: (after: number, limit: number) => string,
    private readonly first: number,
    initial?: { index: number; entries: TraceEntry[] },
  ) {
    if (initial) {
      this.pages.set(initial.index, "loaded");
      for (const e of initial.entries) this.entries.set(e.seq, e);
    }
  }

  get(seq: number): TraceEntry | undefined {
    return this.entries.get(seq);
  }

  /** Entries that arrived by other means (the live tail). */
  add(list: readonly TraceEntry[]) {
    for (const e of list) this.entries.set(e.seq, e);
    if (list.length) this.emit();
  }

  /** Loads the page holding `seq`, once. */
  ensure(seq: number) {
    const index = pageOf(seq, this.first);
    if (this.pages.has(index)) return;
    this.pages.set(index, "loading");
    fetch(this.entriesUrl(pageAfter(index, this.first), PAGE_SIZE), { credentials: "same-origin" })
      .then(async (res) => {
        if (!res.ok) throw new Error(`entries: ${res.status}`);
        const page = (await res.json()) as TracePage;
        for (const e of page.entries) this.entries.set(e.seq, e);
        this.pages.set(index, "loaded");
        this.emit();
      })
      .catch(() => {
        // Asked again after a pause, when the rows are still in view.
        setTimeout(() => this.pages.delete(index), 2000);
      });
  }

  subscribe(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private emit() {
    for (const fn of this.listeners) fn();
  }
}

/** Re-renders when entries arrive. */
export function useStoreVersion(store: EntryStore): number {
  const [version, bump] = useReducer((n: number) => n + 1, 0);
  useEffect(() => store.subscribe(bump), [store]);
  return version;
}

/** A row: two lines of text-sm (2 × 20 px) and a little air. Rows keep this height, except open ones. */
const ROW = 46;
const OVERSCAN = 12;
/** The list's height before it is measured (h-[28rem]). */
const ASSUMED_HEIGHT = 448;

export function Timeline({
  store,
  version,
  first,
  last,
  seq,
  frames,
  takeovers,
  frameUrl,
  onSeq,
}: {
  store: EntryStore;
  version: number;
  first: number;
  last: number;
  seq: number;
  frames: readonly FrameRef[];
  takeovers: readonly TakeoverSpan[];
  frameUrl: (hash: string) => string;
  onSeq: (seq: number) => void;
}) {
  const box = useRef<HTMLDivElement>(null);
  const total = last - first + 1;
  // null until the list is measured: then the view is taken as centred on the selected entry.
  const [view, setView] = useState<{ top: number; height: number } | null>(null);
  const top = view?.top ?? Math.max(0, (seq - first) * ROW - ASSUMED_HEIGHT / 2);
  const height = view?.height ?? ASSUMED_HEIGHT;
  const from = Math.max(first, first + Math.floor(top / ROW) - OVERSCAN);
  const to = Math.min(last, first + Math.ceil((top + height) / ROW) + OVERSCAN);

  // A row's description wraps at word boundaries and shows two lines at most; the selected row
  // and the row with the keyboard focus open to their whole text (hover: the title). Rows are in
  // the list's flow between two spacers, so an open row pushes the rows after it down without
  // being measured; every other row is ROW tall, which the spacers and the range count on.
  const [focused, setFocused] = useState<number | null>(null);
  const open = (s: number) => s === seq || s === focused;
  const selectedEl = useRef<HTMLLIElement | null>(null);

  // Keep the selected entry in view when it moves (slider, keys, filmstrip).
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    // Where it is if it is rendered (an open row above it moves it down), else where it will be.
    const row = selectedEl.current;
    const rowTop = row ? row.offsetTop : (seq - first) * ROW;
    const rowHeight = row ? row.offsetHeight : ROW;
    if (rowTop < el.scrollTop || rowTop + rowHeight > el.scrollTop + el.clientHeight) {
      el.scrollTop = Math.max(0, rowTop - el.clientHeight / 2 + rowHeight / 2);
    }
    setView({ top: el.scrollTop, height: el.clientHeight });
  }, [seq, first]);

  // The list's height changes with the window (and the layout at lg): what is in view, again.
  useEffect(() => {
    const el = box.current;
    if (!el || typeof ResizeObserver === "undefined") return;
    const ro = new ResizeObserver(() => setView({ top: el.scrollTop, height: el.clientHeight }));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  // Load the pages in view and under the selection, at most every 150 ms while they move.
  const lastLoad = useRef(0);
  useEffect(() => {
    const load = () => {
      lastLoad.current = performance.now();
      store.ensure(seq);
      for (let s = from; s <= to; s += PAGE_SIZE) store.ensure(s);
      store.ensure(to);
    };
    const wait = 150 - (performance.now() - lastLoad.current);
    if (wait <= 0) return load();
    const t = setTimeout(load, wait);
    return () => clearTimeout(t);
  }, [store, seq, from, to]);

  const raf = useRef(0);
  useEffect(() => () => cancelAnimationFrame(raf.current), []);
  const onScroll = () => {
    if (raf.current) return;
    raf.current = requestAnimationFrame(() => {
      raf.current = 0;
      const el = box.current;
      if (el) setView({ top: el.scrollTop, height: el.clientHeight });
    });
  };

  const rows = [];
  for (let s = from; s <= to; s++) {
    const e = store.get(s);
    const selected = s === seq;
    const isOpen = open(s);
    const fi = lastAtOrBefore(frames, s);
    const frame = fi >= 0 ? frames[fi] : undefined;
    // `takeovers` are the shown screen's: shade every entry in their periods.
    const held = takeovers.some((t) => s >= t.from && (t.to === null || s <= t.to));
    const text = e ? describeEntry(e) : undefined;
    rows.push(
      <li
        key={s}
        ref={selected ? selectedEl : undefined}
        aria-posinset={s - first + 1}
        aria-setsize={total}
        data-seq={s}
        data-open={isOpen ? "true" : undefined}
        data-testid="trace-entry"
        onFocus={() => setFocused(s)}
        onBlur={(ev) => {
          if (!ev.currentTarget.contains(ev.relatedTarget as Node | null)) setFocused((f) => (f === s ? null : f));
        }}
        className={`flex items-stretch gap-1 border-b border-slate-100 pr-2 text-sm ${selected ? "bg-indigo-50 ring-2 ring-inset ring-indigo-500" : held ? "bg-amber-50" : isOpen ? "bg-white" : ""}`}
        style={isOpen ? { minHeight: ROW } : { height: ROW }}
      >
        <button
          type="button"
          onClick={() => onSeq(s)}
          // On the button, which has the focus in the list, so "current" is heard with its name.
          aria-current={selected ? "true" : undefined}
          title={text}
          className="flex min-w-0 flex-1 items-center gap-2 px-2 py-0.5 text-left hover:bg-slate-50 focus-visible:outline-2 focus-visible:-outline-offset-2 focus-visible:outline-indigo-600"
        >
          <span className="w-12 shrink-0 text-right font-mono text-xs tabular-nums text-slate-600">{s}</span>
          <span className="hidden w-16 shrink-0 font-mono text-xs tabular-nums text-slate-600 sm:inline">{e ? clock(e.at_ms) : ""}</span>
          {e ? <ActorBadge actor={e.actor} name={typeof e.data?.by_name === "string" ? e.data.by_name : undefined} /> : <span className="w-14 shrink-0" />}
          <span data-testid="trace-entry-text" className={`min-w-0 flex-1 break-words leading-5 ${isOpen ? "py-1" : "line-clamp-2"} ${e ? "" : "text-slate-600"}`}>
            {text ?? "…"}
          </span>
        </button>
        {frame ? (
          <a
            href={frameUrl(frame.hash)}
            target="_blank"
            rel="noreferrer"
            data-testid="entry-frame-link"
            aria-label={`The frame at entry ${s} (entry ${frame.seq}), as a PNG`}
            title={`The frame shown at this entry (from entry ${frame.seq})`}
            className={`shrink-0 self-center rounded px-1.5 py-0.5 text-xs font-medium hover:bg-indigo-100 ${e?.event === "frame" ? "text-indigo-700" : "text-slate-600"}`}
          >
            frame
          </a>
        ) : null}
      </li>,
    );
  }

  return (
    <div ref={box} onScroll={onScroll} className="relative h-[24rem] overflow-y-auto overscroll-contain rounded-lg border border-slate-200 bg-white lg:h-[28rem]" data-version={version}>
      <ol aria-label={`Trace entries, ${total.toLocaleString("en-US")} in all`} className="relative" style={{ paddingTop: (from - first) * ROW, paddingBottom: (last - to) * ROW }}>
        {rows}
      </ol>
    </div>
  );
}
