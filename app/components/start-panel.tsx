import { useEffect, useRef } from "react";
import type { BoxJson } from "~/models/box.server";
import { type BoxStart, START_PHASES, type StartPhase } from "~/protocol/box-console";
import { pendingLabel, usePendingIntent } from "./box-facts";
import { removeBoxConfirm } from "./box-name";
import { PostForm } from "./post-form";
import { STEP_NAME, seconds, startElapsed, startWords } from "./start-progress";
import { useNow } from "./use-live-box";

// The box page in place of the screen while the box starts or after it failed: the phases as a
// checklist with the time each took and the time so far (ticking), the image build's steps as a
// bar and the end of the start's log; for a failed box, what failed and where, in a card that
// wraps the reason, with its log and what can be done (remove, launch the same box again).

type StepState = "done" | "current" | "failed" | "todo";

function stepsOf(start: BoxStart | undefined, now: number): { name: StartPhase; state: StepState; took?: number }[] {
  const phases = start?.phases ?? [];
  const failed = start?.phase === "failed";
  return START_PHASES.map((name) => {
    const i = phases.findIndex((p) => p.name === name);
    if (i === -1) return { name, state: "todo" as const };
    const last = i === phases.length - 1;
    const end = phases[i + 1]?.at_ms ?? start?.ended_ms ?? now;
    const state: StepState = !last || start?.phase === "ready" ? "done" : failed ? "failed" : "current";
    return { name, state, took: end - phases[i]!.at_ms };
  });
}

const MARK: Record<StepState, { icon: string; style: string; words: string }> = {
  done: { icon: "✓", style: "bg-emerald-100 text-emerald-800", words: "done" },
  current: { icon: "…", style: "bg-amber-100 text-amber-800 animate-pulse", words: "in progress" },
  failed: { icon: "✕", style: "bg-red-100 text-red-800", words: "failed" },
  todo: { icon: "", style: "bg-slate-100 text-slate-600", words: "not yet" },
};

/** The phases, in order, each with its mark and time. */
function StartSteps({ start, now }: { start: BoxStart | undefined; now: number }) {
  return (
    <ol aria-label="Start phases" className="grid gap-1.5 sm:grid-cols-2">
      {stepsOf(start, now).map((s) => {
        const m = MARK[s.state];
        return (
          <li
            key={s.name}
            aria-current={s.state === "current" ? "step" : undefined}
            data-state={s.state}
            className="flex min-w-0 items-center gap-2 text-sm"
          >
            <span aria-hidden className={`grid h-5 w-5 shrink-0 place-items-center rounded-full text-xs font-semibold ${m.style}`}>
              {m.icon}
            </span>
            <span data-step={s.name} className={s.state === "todo" ? "text-slate-600" : "text-slate-900"}>{STEP_NAME[s.name]}</span>
            <span className="sr-only">({m.words})</span>
            {s.took !== undefined ? <span className="ml-auto tabular-nums text-xs text-slate-600">{seconds(s.took)}</span> : null}
          </li>
        );
      })}
    </ol>
  );
}

/** The image build: step N of M as a bar, and its latest line. */
function BuildProgress({ build }: { build: NonNullable<BoxStart["build"]> }) {
  const known = build.total > 0;
  return (
    <div className="space-y-1">
      <div className="flex flex-wrap justify-between gap-x-3 text-xs text-slate-700">
        <span className="font-medium">Building the image</span>
        <span className="tabular-nums" data-testid="build-step">{known ? `step ${build.step} of ${build.total}` : "preparing"}</span>
      </div>
      <div
        role="progressbar"
        aria-label="Image build"
        aria-valuemin={0}
        aria-valuemax={known ? build.total : undefined}
        aria-valuenow={known ? build.step : undefined}
        aria-valuetext={known ? `step ${build.step} of ${build.total}` : "preparing"}
        className="h-2 w-full overflow-hidden rounded-full bg-slate-200"
      >
        <div
          className={`h-full rounded-full bg-indigo-500 ${known ? "" : "animate-pulse"}`}
          style={{ width: known ? `${Math.round((build.step / build.total) * 100)}%` : "15%" }}
        />
      </div>
      <p className="truncate font-mono text-xs text-slate-600" title={build.line}>{build.line}</p>
    </div>
  );
}

/** The end of the start's log, scrolled to its newest line; it scrolls inside its card. */
function StartLog({ lines }: { lines: string[] }) {
  const ref = useRef<HTMLPreElement>(null);
  useEffect(() => {
    const pre = ref.current;
    if (pre) pre.scrollTop = pre.scrollHeight;
  }, [lines]);
  if (lines.length === 0) return null;
  return (
    <section aria-label="Start log" className="min-w-0">
      <h3 className="text-xs font-semibold text-slate-700">Start log (last {lines.length} lines)</h3>
      <pre
        ref={ref}
        tabIndex={0}
        className="mt-1 max-h-64 overflow-auto whitespace-pre rounded-lg bg-slate-900 p-3 font-mono text-xs leading-5 text-slate-100"
      >
        {lines.join("\n")}
      </pre>
    </section>
  );
}

/** A starting box: its phases, the time so far, the build and its log. */
export function StartingPanel({ box, now: initial }: { box: BoxJson; now: number }) {
  const now = useNow(250, initial);
  const start = box.start;
  return (
    <section aria-labelledby="start-h" className="min-w-0 space-y-4 rounded-xl border border-slate-200 bg-white p-5 shadow-sm">
      <div className="flex flex-wrap items-baseline justify-between gap-2">
        <h2 id="start-h" className="text-base font-semibold">Starting the box</h2>
        <span className="text-sm tabular-nums text-slate-700" data-testid="start-elapsed">
          {seconds(startElapsed(start, box.created_at_ms, now))}
        </span>
      </div>
      <p role="status" aria-live="polite" className="text-sm text-slate-700">{startWords(start)}…</p>
      <StartSteps start={start} now={now} />
      {start?.build ? <BuildProgress build={start.build} /> : null}
      <StartLog lines={start?.log ?? []} />
    </section>
  );
}

/** A failed box: what failed, in which phase and after how long, its log, and what to do. */
export function FailedPanel({
  box,
  csrf,
  canDrive,
}: {
  box: BoxJson;
  csrf: string;
  canDrive: boolean;
}) {
  const pending = usePendingIntent();
  const start = box.start;
  const ran = start?.phase === "ready";
  const took = start?.ended_ms !== undefined ? ` after ${seconds(startElapsed(start, box.created_at_ms, start.ended_ms))}` : "";
  const button = "rounded-md px-3 py-1.5 text-sm font-medium ring-1 disabled:opacity-50";
  return (
    <section
      aria-labelledby="failed-h"
      data-testid="start-failed"
      className="min-w-0 space-y-4 rounded-xl border border-red-200 bg-white p-5 shadow-sm"
    >
      <div className="space-y-1">
        {/* A box that was ready and failed later (its agent refuses this server's key): it did start. */}
        <h2 id="failed-h" className="text-base font-semibold text-red-800">
          {ran ? "This box can no longer be reached" : "This box failed to start"}
        </h2>
        <p className="text-sm text-slate-700">
          {ran
            ? "It started, and this server can no longer drive it: remove it, or launch the same box again."
            : `${start ? `${startWords(start)}${took}.` : "It did not start."} Nothing runs in it: remove it, or launch the same box again.`}
        </p>
      </div>
      <p data-testid="failed-reason" className="whitespace-pre-wrap break-words rounded-lg bg-red-50 p-3 text-sm text-red-900 ring-1 ring-red-200 [overflow-wrap:anywhere]">
        {box.reason ?? "No reason was recorded."}
      </p>
      {start ? <StartSteps start={start} now={start.ended_ms ?? box.created_at_ms} /> : null}
      <StartLog lines={start?.log ?? []} />
      {canDrive ? (
        <div className="flex flex-wrap gap-2">
          <PostForm csrf={csrf} intent="remove" confirm={removeBoxConfirm(box)}>
            <button type="submit" disabled={pending !== undefined} className={`${button} text-red-700 ring-red-200 hover:bg-red-50`}>
              {pending === "remove" ? pendingLabel("remove", "Remove") : "Remove"}
            </button>
          </PostForm>
          <PostForm csrf={csrf} intent="relaunch">
            <button type="submit" disabled={pending !== undefined} className={`${button} text-slate-800 ring-slate-300 hover:bg-slate-50`}>
              {pending === "relaunch" ? pendingLabel("relaunch", "Launch again") : "Launch again"}
            </button>
          </PostForm>
        </div>
      ) : null}
    </section>
  );
}
