import { useLayoutEffect, useRef, useState } from "react";
import { Link, useFetcher } from "react-router";
import type { ForkReplay } from "~/protocol/fork-replay";
import { boxTitle } from "./box-name";
import { Alert, Button, CsrfInput } from "./ui";
import { type FollowedBox, useForkFollow } from "./use-fork-follow";

// "Fork from here" on the trace page, and what follows in its place: "Forking…" while the box is
// made, then the new box (a link, and how its start goes), the replay counting live, and its
// report. The panel stays where the person clicked, is scrolled into view as it grows, and has
// the focus, so neither a sighted nor a keyboard user has to look for the answer.

const fmt = (n: number) => n.toLocaleString("en-US");

/** What the trace route's action answers to a fork (formAction turns a refusal into `error`). */
export type ForkResult = { forked: { id: string; up_to: number; box: FollowedBox; replay: ForkReplay } } | { error: string };

const PHASES: Record<string, string> = {
  queued: "waiting its turn",
  image: "preparing the image",
  container: "starting the container",
  x: "starting the display",
  vnc: "starting the screen",
  browser: "starting the browser",
  agent: "starting the agent",
};

/** The new box's state in words. */
function startText(box: FollowedBox): string {
  if (box.state === "starting") {
    const phase = box.start?.phase;
    const build = box.start?.build;
    if (build) return `starting: building the image, step ${build.step} of ${build.total}`;
    return phase && PHASES[phase] ? `starting: ${PHASES[phase]}` : "starting";
  }
  if (box.state === "failed") return `failed to start${box.reason ? `: ${box.reason}` : ""}`;
  if (box.state === "gone") return "removed";
  return box.state;
}

const STATE_TONE: Record<string, string> = {
  starting: "bg-sky-100 text-sky-900",
  ready: "bg-emerald-100 text-emerald-900",
  failed: "bg-red-100 text-red-900",
};

/** The replay's progress or its report, with the new box's state. Shared by the fork panel and a fork's own trace page. */
export function ReplayStatus({ box, replay }: { box?: FollowedBox; replay?: ForkReplay }) {
  const waiting = !replay || (!replay.done && replay.attempted === 0 && box?.state === "starting");
  return (
    <div className="space-y-2 text-sm">
      {box ? (
        <p className="flex flex-wrap items-center gap-2">
          <span className="text-slate-700">The new box is</span>
          <span data-testid="fork-box-state" className={`rounded-full px-2 py-0.5 text-xs font-medium ${STATE_TONE[box.state] ?? "bg-slate-200 text-slate-800"}`}>
            {startText(box)}
          </span>
        </p>
      ) : null}
      {replay && !replay.done ? (
        <div className="space-y-1">
          <div
            role="progressbar"
            aria-label="Replay"
            aria-valuemin={0}
            aria-valuemax={Math.max(1, replay.total)}
            aria-valuenow={replay.attempted}
            aria-valuetext={`${replay.attempted} of ${replay.total} steps attempted, ${replay.ok} ok`}
            className="h-2 overflow-hidden rounded-full bg-slate-200"
          >
            <div className="h-full bg-indigo-600 transition-[width]" style={{ width: `${replay.total ? (replay.attempted / replay.total) * 100 : 0}%` }} />
          </div>
          <p data-testid="fork-replay-count" className="tabular-nums text-slate-800">
            {waiting ? `The replay starts once the box is ready: ${fmt(replay.total)} ${replay.total === 1 ? "step" : "steps"} to do.` : (
              <>
                Replaying: <strong>{fmt(replay.attempted)}</strong> of {fmt(replay.total)} steps attempted, <strong>{fmt(replay.ok)}</strong> ok
              </>
            )}
          </p>
        </div>
      ) : null}
      {replay?.done ? <ReplayReport replay={replay} /> : null}
    </div>
  );
}

function ReplayReport({ replay }: { replay: ForkReplay }) {
  const all = replay.stopped_at === null && !replay.truncated && replay.ok === replay.attempted;
  return (
    <div data-testid="fork-replay-report" className="space-y-2">
      <p className={all ? "text-emerald-800" : "text-amber-900"}>
        <span className="font-medium">Replay done:</span>{" "}
        <span className="tabular-nums">
          {fmt(replay.ok)} of {fmt(replay.attempted)} {replay.attempted === 1 ? "step" : "steps"} ok
        </span>
        {replay.total > replay.attempted ? <span className="tabular-nums"> ({fmt(replay.total - replay.attempted)} of {fmt(replay.total)} not reached)</span> : null}
        {replay.stopped_at !== null ? <span>; stopped at entry {fmt(replay.stopped_at)}, which failed this time</span> : null}
        {replay.truncated ? <span>; cut short{replay.reason ? `: ${replay.reason}` : " by the replay's time limit"}</span> : replay.reason ? <span>; {replay.reason}</span> : null}.
      </p>
      {replay.skipped.length ? (
        <details open={replay.skipped.length <= 5} className="rounded-md bg-slate-50 p-2">
          <summary className="cursor-pointer text-slate-700">
            {fmt(replay.skipped.length)} {replay.skipped.length === 1 ? "entry" : "entries"} not done again
          </summary>
          <ul className="mt-1 max-h-40 space-y-1 overflow-y-auto text-xs text-slate-700" data-testid="fork-skipped">
            {replay.skipped.map((s) => (
              <li key={s.seq} className="break-words">
                <span className="font-mono tabular-nums">#{s.seq}</span> {s.kind.replace(/_/g, " ")}: {s.why}
              </li>
            ))}
          </ul>
        </details>
      ) : null}
    </div>
  );
}

/** One line for assistive technology per phase (the counts are in the progress bar, not announced each step). */
function phaseText(mode: string, box: FollowedBox | undefined, replay: ForkReplay | undefined): string {
  if (mode === "pending") return "Forking…";
  if (replay?.done) return `Replay done: ${replay.ok} of ${replay.attempted} steps ok.`;
  if (box?.state === "ready") return "The new box is ready; replaying.";
  if (box?.state === "failed") return "The new box failed to start.";
  return "Forked; the new box is starting.";
}

/** Posts `intent=fork` with the selected entry to the page's own action, then follows the fork. */
export function ForkPanel({ seq, csrf, workspace }: { seq: number; csrf: string; workspace: string }) {
  const fetcher = useFetcher<ForkResult>();
  const result = fetcher.data;
  const [closed, setClosed] = useState<ForkResult | undefined>(undefined);
  const [asked, setAsked] = useState(false);
  const busy = fetcher.state !== "idle";
  const forked = !busy && result && "forked" in result && result !== closed ? result.forked : undefined;
  const mode = busy ? "pending" : forked ? "forked" : "form";
  const { followed } = useForkFollow(workspace, asked);
  const now = forked ? followed(forked.id, { box: forked.box, replay: forked.replay }) : {};

  const panel = useRef<HTMLDivElement>(null);
  const button = useRef<HTMLButtonElement>(null);
  const wasForm = useRef(true);
  // Into view (and focus) as the form turns into the pending state; into view again as it grows,
  // while the focus is still in it.
  const size = `${mode}:${now.box?.state}:${now.replay?.done}`;
  useLayoutEffect(() => {
    const el = panel.current;
    if (mode === "form") {
      if (!wasForm.current) button.current?.focus();
      wasForm.current = true;
      return;
    }
    wasForm.current = false;
    if (!el) return;
    if (mode === "pending") el.focus({ preventScroll: true });
    if (el.contains(document.activeElement)) el.scrollIntoView({ block: "nearest" });
  }, [mode, size]);

  return (
    <div className="border-t border-slate-100 pt-4">
      {mode === "form" ? (
        <div className="space-y-2">
          {result && "error" in result ? <Alert>{result.error}</Alert> : null}
          <fetcher.Form
            method="post"
            className="flex flex-wrap items-center gap-3"
            onSubmit={(e) => {
              if (fetcher.state !== "idle") e.preventDefault();
              else setAsked(true);
            }}
          >
            <CsrfInput token={csrf} />
            <input type="hidden" name="intent" value="fork" />
            <input type="hidden" name="seq" value={seq} />
            <Button ref={button} type="submit">
              Fork from here
            </Button>
            <span className="min-w-0 text-xs text-slate-600">A new box that does the recorded steps again, up to entry {fmt(seq)}.</span>
          </fetcher.Form>
        </div>
      ) : (
        <div
          ref={panel}
          tabIndex={-1}
          data-testid="fork-status"
          aria-labelledby="fork-status-title"
          className="scroll-my-4 space-y-3 rounded-lg bg-indigo-50 p-3 ring-1 ring-indigo-200 focus-visible:outline-2 focus-visible:outline-indigo-600"
        >
          <span className="sr-only" role="status">
            {phaseText(mode, now.box, now.replay)}
          </span>
          {mode === "pending" ? (
            <p id="fork-status-title" className="flex items-center gap-2 text-sm font-medium text-indigo-900">
              <span aria-hidden className="inline-block h-4 w-4 animate-spin rounded-full border-2 border-indigo-300 border-t-indigo-700" />
              Forking… making a box that replays the trace up to entry {fmt(Number(fetcher.formData?.get("seq") ?? seq))}.
            </p>
          ) : forked ? (
            <>
              <p id="fork-status-title" className="text-sm text-slate-900">
                <span className="font-medium">Forked</span> up to entry {fmt(forked.up_to)}:{" "}
                <Link to={`/boxes/${forked.id}`} className="break-all font-mono font-medium text-indigo-700 underline" data-testid="fork-link">
                  {boxTitle(now.box ?? forked.box)}
                </Link>
              </p>
              <ReplayStatus box={now.box} replay={now.replay} />
              <div className="flex flex-wrap items-center gap-3 text-sm">
                <Link to={`/boxes/${forked.id}/trace`} className="font-medium text-indigo-700 hover:underline">
                  The fork's trace
                </Link>
                <Button type="button" variant="secondary" onClick={() => setClosed(result)}>
                  Fork again
                </Button>
              </div>
            </>
          ) : null}
        </div>
      )}
    </div>
  );
}
