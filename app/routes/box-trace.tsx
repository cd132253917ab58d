import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { Link, type ShouldRevalidateFunctionArgs } from "react-router";
import { noSuchBox } from "~/edge/screen-param.server";
import { useFrameCache } from "~/components/frame-cache";
import { boxTitle, shortId } from "~/components/box-name";
import { Shell } from "~/components/shell";
import { clock, describeEntry } from "~/components/trace-describe";
import { ForkPanel, type ForkResult } from "~/components/fork-panel";
import { ForkCard } from "~/components/fork-card";
import { SelectedEntry } from "~/components/trace-entry-panel";
import { RecordingPlayer } from "~/components/trace-recording";
import { useFrameFollow } from "~/components/trace-follow";
import { type FrameHandle, FrameView } from "~/components/trace-frames";
import { Filmstrip, Scrubber } from "~/components/trace-scrubber";
import { EntryStore, Timeline, useStoreVersion } from "~/components/trace-timeline";
import { requireBoxWorkspace, requireCsrf } from "~/edge/console.server";
import { field, formAction } from "~/edge/form.server";
import { forkOf } from "~/models/fork-progress.server";
import { forkBox } from "~/models/fork.server";
import {
  PAGE_SIZE,
  type TraceEntry,
  type TracePage,
  type TraceSummary,
  cloneSummary,
  foldEntries,
  lastAtOrBefore,
  pageAfter,
  pageOf,
  recordingAt,
  takeoverAt,
} from "~/models/trace-summary";
import { traceSummary } from "~/models/trace-summary.server";
import { readTrace, traceBox } from "~/models/trace.server";
import { ApiError, isApiError } from "~/utils/api-error.server";
import type { Route } from "./+types/box-trace";

// The trace of one box in the console: a timeline of every entry, a slider and a filmstrip over
// the recorded frames (takeover periods shaded), the frame at the selected entry, and "Fork from
// here". Long traces come a page at a time; `?seq=` keeps the selected entry in the address.
// Works for a removed box: its trace stays. The summary it loads with is kept by
// models/trace-summary.server.ts; which frames load as the slider moves, by trace-follow.ts.

export const meta: Route.MetaFunction = ({ data }) => [
  { title: `Trace of ${data && "box" in data && data.box ? boxTitle(data.box) : "a box"} · holm` },
];

function wholeParam(raw: string | null): number | undefined {
  return raw !== null && /^[0-9]{1,15}$/.test(raw) ? Number(raw) : undefined;
}

export async function loader({ request, params }: Route.LoaderArgs) {
  const ctx = await requireBoxWorkspace(request, params.id);
  let box;
  try {
    box = await traceBox(ctx.actor, params.id);
  } catch (e) {
    if (isApiError(e) && e.code === "not_found") throw noSuchBox(params.id);
    throw e;
  }
  const summary = await traceSummary(box.id);
  const url = new URL(request.url);
  let seq: number | null = null;
  let page: { index: number; entries: TraceEntry[] } | null = null;
  if (summary.first !== null && summary.last !== null) {
    const asked = wholeParam(url.searchParams.get("seq"));
    seq = Math.min(summary.last, Math.max(summary.first, asked ?? summary.last));
    const index = pageOf(seq, summary.first);
    page = { index, entries: (await readTrace(box.id, { after: pageAfter(index, summary.first), limit: PAGE_SIZE })).entries };
  }
  const screen = Math.min(summary.screens - 1, wholeParam(url.searchParams.get("screen")) ?? 0);
  return {
    box: { id: box.id, name: box.name ?? undefined, removed: box.removed },
    // This box is a fork: where from, and its replay (followed live while it runs).
    fork: (await forkOf(box.id)) ?? null,
    workspace: ctx.workspace.id,
    summary,
    seq,
    screen,
    page,
    csrf: ctx.csrf,
    canFork: ctx.workspace.role !== "viewer",
  };
}

export async function action({ request, params }: Route.ActionArgs) {
  return formAction(async () => {
    const ctx = await requireBoxWorkspace(request, params.id, "member");
    const form = await request.formData();
    requireCsrf(form, ctx);
    if (field(form, "intent") !== "fork") throw new ApiError("bad_request", "unknown action");
    const upTo = wholeParam(field(form, "seq"));
    if (upTo === undefined) throw new ApiError("bad_request", "choose an entry to fork from");
    const { box } = await forkBox(ctx.actor, params.id, { mode: "replay", up_to: upTo }, { queue: true });
    const replay = (await forkOf(box.id))?.replay ?? { total: 0, attempted: 0, ok: 0, done: false, stopped_at: null, truncated: false, skipped: [] };
    return {
      forked: { id: box.id, up_to: upTo, box: { id: box.id, name: box.name, state: box.state, reason: box.reason, start: box.start }, replay },
    } satisfies ForkResult;
  });
}

/** Moving along the trace changes only the address's ?seq=; the page loads what it needs itself. */
export function shouldRevalidate({ currentUrl, nextUrl, formMethod, defaultShouldRevalidate }: ShouldRevalidateFunctionArgs) {
  if (formMethod && formMethod !== "GET") return false;
  if (currentUrl.pathname === nextUrl.pathname) return false;
  return defaultShouldRevalidate;
}

type LoaderData = Route.ComponentProps["loaderData"];

export default function BoxTrace({ loaderData }: Route.ComponentProps) {
  // A new box is a new page: no state carries over.
  return <TracePage key={loaderData.box.id} {...loaderData} />;
}

const fmt = (n: number) => n.toLocaleString("en-US");
const LIVE_EVERY_MS = 2000;
/** While the slider moves, the rest of the page (timeline, filmstrip, address) follows this often. */
const COMMIT_MS = 250;

function TracePage(props: LoaderData) {
  const { box, csrf, canFork, workspace } = props;
  const [summary, setSummary] = useState<TraceSummary>(props.summary);
  // The selected entry as the page shows it (timeline, filmstrip, address); `scrub` runs ahead of
  // it while the slider moves, and the frame follows `scrub` directly.
  const [seq, setSeqState] = useState<number>(props.seq ?? 0);
  const scrub = useRef(seq);
  const [screen, setScreen] = useState(props.screen);
  const empty = summary.first === null || summary.last === null;
  const first = summary.first ?? 0;
  const last = summary.last ?? 0;
  const total = last - first + 1;

  const entriesUrl = useCallback((after: number, limit: number) => `/boxes/${box.id}/trace/entries?after=${after}&limit=${limit}`, [box.id]);
  const frameUrl = useCallback((hash: string) => `/boxes/${box.id}/trace/frames/${hash}`, [box.id]);
  const [store] = useState(() => new EntryStore(entriesUrl, first, props.page ?? undefined));
  const version = useStoreVersion(store);

  const frames = useMemo(() => summary.frames.filter((f) => f.screen === screen), [summary.frames, screen]);
  const spans = useMemo(() => summary.takeovers.filter((t) => t.screen === screen), [summary.takeovers, screen]);
  const fi = lastAtOrBefore(frames, seq);
  const frame = fi >= 0 ? frames[fi] : undefined;
  const width = summary.width ?? 1280;
  const height = summary.height ?? 800;
  const cache = useFrameCache(frameUrl);
  const view = useRef<FrameHandle>(null);
  // Where the slider is → the frame shown and the frames to load; no React render on this path.
  const follow = useFrameFollow({ frames, index: fi, cache, view, scrub });

  // The page catches up with the slider at most every COMMIT_MS.
  const commitTimer = useRef(0);
  const committedAt = useRef(0);
  const commit = useCallback(() => {
    if (commitTimer.current) return;
    const wait = Math.max(0, COMMIT_MS - (performance.now() - committedAt.current));
    commitTimer.current = window.setTimeout(() => {
      commitTimer.current = 0;
      committedAt.current = performance.now();
      setSeqState(scrub.current);
    }, wait);
  }, []);
  useEffect(() => () => clearTimeout(commitTimer.current), []);
  const bounds = useRef({ first, last });
  bounds.current = { first, last };
  // The entry to announce once the page catches up with it (see `said` below).
  const announceSeq = useRef<number | null>(null);
  /**
   * Selects an entry (from the slider, keys, the timeline or the filmstrip). `announce`: say it in
   * the live region; not from the slider, which a screen reader speaks itself (its valuetext).
   */
  const select = useCallback(
    (n: number, announce = false) => {
      const { first, last } = bounds.current;
      scrub.current = Math.min(last, Math.max(first, Math.round(n)));
      announceSeq.current = announce ? scrub.current : null;
      follow(scrub.current);
      commit();
    },
    [follow, commit],
  );

  // ←/→ anywhere on the page step entry by entry (the slider does so itself when focused).
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
      if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
      const target = e.target as HTMLElement | null;
      if (target?.closest("input, textarea, select, [contenteditable=true]")) return;
      e.preventDefault();
      select(scrub.current + (e.key === "ArrowRight" ? 1 : -1), true);
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [select]);

  // The address keeps the selected entry, without a navigation per step.
  useEffect(() => {
    if (empty) return;
    const t = setTimeout(() => {
      const url = new URL(window.location.href);
      // A navigation away may have changed the address before this page unmounts.
      if (url.pathname !== `/boxes/${box.id}/trace`) return;
      url.searchParams.set("seq", String(seq));
      if (screen) url.searchParams.set("screen", String(screen));
      else url.searchParams.delete("screen");
      if (url.href !== window.location.href) window.history.replaceState(window.history.state, "", url);
    }, 250);
    return () => clearTimeout(t);
  }, [seq, screen, empty, box.id]);

  // A box that is still there keeps adding entries: fold them in, and follow them when at the end.
  const summaryRef = useRef(summary);
  summaryRef.current = summary;
  useEffect(() => {
    if (box.removed || summary.ended) return;
    let stopped = false;
    let busy = false;
    const tick = async () => {
      if (busy || document.hidden) return;
      busy = true;
      try {
        const before = summaryRef.current.last;
        let after = before ?? -1;
        const got: TraceEntry[] = [];
        for (let i = 0; i < 10; i++) {
          const res = await fetch(entriesUrl(after, PAGE_SIZE), { credentials: "same-origin" });
          if (!res.ok) return;
          const page = (await res.json()) as TracePage;
          got.push(...page.entries);
          if (page.next === null || page.entries.length === 0) break;
          after = page.next;
        }
        if (stopped || got.length === 0) return;
        store.add(got);
        const newest = got[got.length - 1]!.seq;
        if (before === null || scrub.current === before) {
          scrub.current = newest;
          setSeqState(newest);
        }
        setSummary((prev) => foldEntries(cloneSummary(prev), got));
      } finally {
        busy = false;
      }
    };
    const timer = setInterval(() => void tick().catch(() => {}), LIVE_EVERY_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [box.removed, summary.ended, store, entriesUrl]);

  const textFor = useCallback(
    (n: number) => {
      const e = store.get(n);
      // The entry's number as the page shows it (the slider's caption, the timeline, the frame's
      // label: its seq), then its place among them, as the caption says "entry 2 · 3 of 21".
      return `entry ${fmt(n)}, ${fmt(n - first + 1)} of ${fmt(total)}${e ? `, ${clock(e.at_ms)}, ${describeEntry(e)}` : ""}`;
    },
    // `version`: the entries' times and descriptions arrive with their pages.
    [store, first, total, version],
  );
  // What the polite live region says: the entry chosen by the page-wide keys, the timeline or the
  // filmstrip, once the page has caught up with it. Kept as words, not worked out at each render,
  // so entries the live tail adds ("of 12" after "of 11") are not announced while the selection
  // stays; said again only when the entry's description arrives after the move.
  const [said, setSaid] = useState<{ seq: number; text: string; whole: boolean } | null>(null);
  useEffect(() => {
    if (announceSeq.current !== seq) return;
    announceSeq.current = null;
    setSaid({ seq, text: textFor(seq), whole: store.get(seq) !== undefined });
    // Only a change of the selected entry announces; textFor changes with every entry that arrives.
  }, [seq]);
  useEffect(() => {
    if (said && !said.whole && store.get(said.seq)) setSaid({ seq: said.seq, text: textFor(said.seq), whole: true });
  }, [said, store, textFor, version]);
  const announced = useCallback((n: number) => select(n, true), [select]);
  const entry = store.get(seq);
  const held = takeoverAt(spans, screen, seq);
  const recording = recordingAt(summary.recordings, screen, seq);
  const frameLabel = frame
    ? `The screen${summary.screens > 1 ? ` ${screen}` : ""} at entry ${frame.seq}, ${clock(frame.at_ms)}${takeoverAt(spans, screen, frame.seq) ? ", while a person had it" : ""}`
    : "No frame recorded yet at this entry";

  return (
    <Shell>
      <nav aria-label="Breadcrumb" className="text-sm text-slate-600">
        <ol className="flex flex-wrap items-center gap-1">
          <li>
            <Link to="/" className="text-indigo-700 hover:underline">
              Boxes
            </Link>
          </li>
          <li aria-hidden>›</li>
          <li>
            <Link to={`/boxes/${box.id}`} className={`text-indigo-700 hover:underline ${box.name ? "" : "font-mono text-xs"}`}>
              {boxTitle(box)}
            </Link>
          </li>
          <li aria-hidden>›</li>
          <li aria-current="page">Trace</li>
        </ol>
      </nav>
      <div className="mt-2 flex flex-wrap items-end justify-between gap-3">
        <div>
          <h1 className="text-2xl font-semibold tracking-tight">
            Trace of {box.name ? <span>{box.name}</span> : <span className="font-mono text-xl">{shortId(box.id)}</span>}
          </h1>
          <p className="text-sm text-slate-600">
            {empty ? "Nothing recorded yet." : `${fmt(total)} entries, ${fmt(summary.frames.length)} frames.`}{" "}
            {box.removed ? (
              <span className="rounded-full bg-slate-200 px-2 py-0.5 text-xs font-medium text-slate-700">removed — its trace stays</span>
            ) : summary.ended ? null : (
              <span className="text-emerald-700">● recording</span>
            )}
          </p>
        </div>
        <Link to={`/boxes/${box.id}`} className="text-sm font-medium text-indigo-700 hover:underline">
          {box.removed ? "The box's page" : "Back to the box"}
        </Link>
      </div>
      <p role="status" className="sr-only">
        {said?.text ?? ""}
      </p>
      {props.fork ? <ForkCard boxId={box.id} fork={props.fork} workspace={workspace} /> : null}

      {empty ? (
        <div className="mt-6 rounded-xl border border-slate-200 bg-white p-5 text-sm text-slate-600 shadow-sm">
          This trace has no entries{box.removed ? "." : " yet. The page adds them as the box records them."}
        </div>
      ) : (
        <div className="mt-6 grid gap-6 lg:grid-cols-[minmax(0,1fr)_26rem]">
          <section aria-label="Frames" className="min-w-0 space-y-4 rounded-xl border border-slate-200 bg-white p-4 shadow-sm">
            {summary.screens > 1 ? (
              <div role="group" aria-label="Screen" className="flex flex-wrap gap-1">
                {Array.from({ length: summary.screens }, (_, n) => (
                  <button
                    key={n}
                    type="button"
                    aria-pressed={n === screen}
                    onClick={() => setScreen(n)}
                    className={`rounded-md px-2.5 py-1 text-xs font-medium ${n === screen ? "bg-slate-900 text-white" : "text-slate-700 ring-1 ring-slate-300 hover:bg-slate-100"}`}
                  >
                    Screen {n}
                  </button>
                ))}
              </div>
            ) : null}
            <FrameView cache={cache} handle={view} initial={frame?.hash} width={width} height={height} label={frameLabel} />
            <div className="flex flex-wrap items-center justify-between gap-2 text-xs text-slate-600">
              <span aria-live="off">
                {frame ? (
                  <>
                    Frame {fmt(fi + 1)} of {fmt(frames.length)}, from entry {fmt(frame.seq)} at {clock(frame.at_ms)} UTC
                  </>
                ) : (
                  "No frame at or before this entry"
                )}
              </span>
              {frame ? (
                <a href={frameUrl(frame.hash)} target="_blank" rel="noreferrer" className="font-medium text-indigo-700 hover:underline">
                  Open the PNG
                </a>
              ) : null}
            </div>
            {recording ? (
              <RecordingPlayer
                span={recording}
                atMs={entry?.at_ms ?? frame?.at_ms}
                url={recording.id ? `/boxes/${box.id}/trace/recordings/${recording.id}` : null}
              />
            ) : null}
            <Scrubber first={first} last={last} seq={seq} textFor={textFor} frames={frames} takeovers={spans} onScrub={select} />
            <Filmstrip frames={frames} index={fi} takeovers={spans} cache={cache} onSeq={announced} />
            <SelectedEntry seq={seq} entry={entry} held={!!held} />
            {canFork ? <ForkPanel seq={seq} csrf={csrf} workspace={workspace} /> : null}
          </section>
          <section aria-label="Timeline" className="min-w-0">
            <h2 className="mb-2 flex items-baseline justify-between text-sm font-semibold">
              Timeline <span className="text-xs font-normal text-slate-500">times in UTC · ←/→ step</span>
            </h2>
            <Timeline
              store={store}
              version={version}
              first={first}
              last={last}
              seq={seq}
              frames={frames}
              takeovers={spans}
              frameUrl={frameUrl}
              onSeq={announced}
            />
          </section>
        </div>
      )}
    </Shell>
  );
}
