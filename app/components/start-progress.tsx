import { type BoxStart, START_PHASES, type StartPhase } from "~/protocol/box-console";

// A box's start in words, for a starting or failed box: the phase it is in (or failed in), how
// long it has taken, and a compact bar. Pure and hook-free, so a list of 80 boxes renders it in
// every row off one shared clock (`now`). The box page's full view is start-panel.tsx.

/** What a phase is, as a step of the start (the box page's checklist). */
export const STEP_NAME: Record<StartPhase, string> = {
  queued: "Start slot",
  image: "Image",
  container: "Container",
  x: "X display",
  vnc: "VNC",
  browser: "Browser",
  agent: "Agent",
};

/** What the box is doing in a phase. */
const DOING: Record<StartPhase, string> = {
  queued: "Waiting for a start slot",
  image: "Finding the image",
  container: "Creating the container",
  x: "Starting the X display",
  vnc: "Starting VNC",
  browser: "Starting Chromium",
  agent: "Waiting for the agent",
};

/** What the box was doing when it failed ("Failed while …"). */
const FAILED_WHILE: Record<StartPhase, string> = {
  queued: "waiting for a start slot",
  image: "building the image",
  container: "creating the container",
  x: "starting the X display",
  vnc: "starting VNC",
  browser: "starting Chromium",
  agent: "waiting for the agent",
};

/** Seconds with a tenth under a minute ("4.2 s"), else minutes and seconds ("3 min 05 s"). */
export function seconds(ms: number): string {
  const t = Math.max(0, ms);
  if (t < 60_000) return `${(Math.floor(t / 100) / 10).toFixed(1)} s`;
  const s = Math.floor(t / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
}

/** The phase the start is in, or failed in. */
export function startPhase(start: BoxStart): StartPhase {
  return start.failed_in ?? start.phases.at(-1)?.name ?? "queued";
}

/** When the start began: its first phase. */
export function startedAt(start: BoxStart | undefined, fallback: number): number {
  return start?.phases[0]?.at_ms ?? fallback;
}

/** How long the start took, or has taken until `now`. */
export function startElapsed(start: BoxStart | undefined, fallback: number, now: number): number {
  return (start?.ended_ms ?? now) - startedAt(start, fallback);
}

/** The phase in words: "Building the image (step 3 of 9)", "Failed while starting VNC", "Ready". */
export function startWords(start: BoxStart | undefined): string {
  if (!start) return "Starting";
  if (start.phase === "ready") return "Ready";
  const phase = startPhase(start);
  if (start.phase === "failed") return `Failed while ${FAILED_WHILE[phase]}`;
  if (phase === "image" && start.build) {
    return start.build.total > 0 ? `Building the image (step ${start.build.step} of ${start.build.total})` : "Building the image";
  }
  return DOING[phase];
}

/** How far the start is, 0 to 1: a share per phase, the image's by its build steps. */
export function startFraction(start: BoxStart | undefined): number {
  if (!start) return 0;
  if (start.phase === "ready") return 1;
  const i = START_PHASES.indexOf(startPhase(start));
  const b = start.build;
  const within = b && b.total > 0 ? b.step / b.total : 0.5;
  return Math.min(1, (i + within) / START_PHASES.length);
}

/** The compact view: the phase in words, the time taken, a bar (red once failed). */
export function StartProgress({ start, createdAt, now }: { start: BoxStart | undefined; createdAt: number; now: number }) {
  const failed = start?.phase === "failed";
  const pct = Math.round(startFraction(start) * 100);
  const words = startWords(start);
  return (
    <div data-testid="start-progress" className="min-w-0 max-w-xs">
      <div className="flex flex-wrap items-baseline justify-between gap-x-2 text-xs">
        <span className={`min-w-0 break-words ${failed ? "font-medium text-red-800" : "text-slate-700"}`}>{words}</span>
        <span className="tabular-nums text-slate-600">{seconds(startElapsed(start, createdAt, now))}</span>
      </div>
      <div
        role="progressbar"
        aria-label={failed ? "Start failed" : "Start progress"}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={pct}
        aria-valuetext={words}
        className="mt-1 h-1 w-full overflow-hidden rounded-full bg-slate-200"
      >
        <div className={`h-full rounded-full ${failed ? "bg-red-500" : "bg-amber-500"}`} style={{ width: `${pct}%` }} />
      </div>
    </div>
  );
}
