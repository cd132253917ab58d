import { type BoxStart, START_LOG_LINES, START_PHASES, type StartPhase } from "~/protocol/box-console";
import { db } from "~/utils/db.server";
import { log } from "~/utils/log.server";
import { observeStart } from "~/utils/metrics.server";
import { agentSecret, vncPassword } from "./agent.server";
import { type BoxRow, boxChanges, liveStart, setLiveStart, toBoxJson } from "./box-record.server";

// How a box's start goes, as people see it (issue 14): the phases with when each began, the image
// build's step and latest line, and the last lines of the start's log. Progress is pushed to the
// console (boxChanges) at most a few times a second per box; the row is written when the phase
// changes and when the start ends, never per log line.

/** At most this often (ms) a box's build progress is pushed. */
const PUSH_EVERY_MS = 250;
/** A log line is cut to this many characters (a build can print a long one). */
const LINE_MAX = 400;

/** The start of a box that has just been recorded: waiting for a start slot. */
export function queuedStart(at = Date.now()): BoxStart {
  return { phase: "queued", phases: [{ name: "queued", at_ms: at }], log: [] };
}

/** What a phase waits for, in words for a reason ("… while waiting for the X display"). */
const WAITING_FOR: Record<StartPhase, string> = {
  queued: "waiting for a start slot",
  image: "preparing the image",
  container: "creating the container",
  x: "waiting for the X display",
  vnc: "waiting for VNC",
  browser: "waiting for Chromium",
  agent: "waiting for the in-box agent",
};

/** What begins each line of the box's own output in the start log. */
export const BOX_LINE = "│ ";

const STEP_RE = /^Step (\d+)\/(\d+) :/;
const PERCENT_RE = /^(.*?)\d{1,3}%$/;

/** One box's start as it happens; created by the launch, finished once (ready or failed). */
export class StartTracker {
  readonly start: BoxStart;
  private timer: NodeJS.Timeout | undefined;
  private pushedAt = 0;
  private redact: string[];

  constructor(private readonly row: BoxRow) {
    const saved = row.start_json ? (JSON.parse(row.start_json) as BoxStart) : undefined;
    this.start = saved && saved.phase !== "ready" && saved.phase !== "failed" ? saved : queuedStart();
    // Nothing the box's secrets could leak through: its own output is scrubbed of them.
    this.redact = [agentSecret(row.id), vncPassword(row.id)];
    setLiveStart(row.id, this.start);
  }

  /** The phase it is in (the last begun). */
  get phase(): StartPhase {
    return this.start.phases.at(-1)?.name ?? "queued";
  }

  /** Whether this start still shows (it stops once the box was removed). */
  private get shown(): boolean {
    return liveStart(this.row.id) === this.start;
  }

  /**
   * Enters `phase`, and any phase before it not yet seen (they passed between two looks, so
   * they begin at the same moment); a phase already passed is left as it is. Saved and pushed.
   */
  async enter(phase: StartPhase, at = Date.now()): Promise<void> {
    const want = START_PHASES.indexOf(phase);
    const have = START_PHASES.indexOf(this.phase);
    if (want <= have) return;
    for (let i = have + 1; i <= want; i++) this.start.phases.push({ name: START_PHASES[i]!, at_ms: at });
    this.start.phase = phase;
    log.debug({ box: this.row.id, phase }, "box start phase");
    if (phase !== "image") delete this.start.build;
    await this.save();
  }

  /** A line of the image build: kept in the log; a `Step N/M` line moves the build's step. */
  buildLine(line: string): void {
    const step = STEP_RE.exec(line);
    const cur = this.start.build ?? { step: 0, total: 0, line: "" };
    this.start.build = step ? { step: Number(step[1]), total: Number(step[2]), line: cut(line) } : { ...cur, line: cut(line) };
    this.keep([line]);
    this.pushSoon();
  }

  /**
   * The container's own output (read before it is removed), scrubbed of the box's secrets. Each
   * line is marked as the box's (BOX_LINE) and stripped of control characters: anything in the
   * box can print, and it must not pass for the server's heading or lines.
   */
  containerLines(lines: string[]): void {
    if (lines.length === 0) return;
    // Its own last lines, under their heading: a long output must not push the heading out.
    const own = lines.slice(-(START_LOG_LINES - 1)).map((l) => BOX_LINE + this.scrub(l).replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]+/gu, " "));
    this.keep(["— the box's own output —", ...own]);
  }

  /** Ends the start as ready: the patch for the row, written with the state (one push). */
  ready(at = Date.now()): Partial<BoxRow> {
    return this.end({ phase: "ready", ended_ms: at });
  }

  /** Ends the start as failed in the phase it was in: the patch for the row, written with the state. */
  failed(at = Date.now()): Partial<BoxRow> {
    return this.end({ phase: "failed", failed_in: this.phase, ended_ms: at });
  }

  /** What failed, in plain words, for the box's reason; `detail` is the cause. */
  reason(detail: string): string {
    const phase = this.phase;
    const b = this.start.build;
    if (phase === "image") {
      const at = b && b.total > 0 ? ` at step ${b.step} of ${b.total}` : "";
      return `The box image could not be built${at}: ${detail}`;
    }
    if (phase === "container") return `The box's container could not be created or started: ${withoutHostPaths(detail)}`;
    return `The box did not start while ${WAITING_FOR[phase]}: ${detail}`;
  }

  /** Stops showing this start live (its row keeps what was saved); nothing more is pushed. */
  drop(): void {
    clearTimeout(this.timer);
    if (this.shown) setLiveStart(this.row.id, undefined);
  }

  private end(patch: Pick<BoxStart, "phase" | "ended_ms" | "failed_in">): Partial<BoxRow> {
    clearTimeout(this.timer);
    Object.assign(this.start, patch);
    delete this.start.build;
    setLiveStart(this.row.id, undefined);
    this.report();
    return { start_json: JSON.stringify(this.start) };
  }

  /** The start's log line (each phase's ms; a failure with the box's own start log) and metrics. */
  private report(): void {
    const { phases, ended_ms: ended = Date.now(), failed_in: failedIn } = this.start;
    observeStart(phases, ended, failedIn);
    const took = Object.fromEntries(phases.map((p, i) => [p.name, (phases[i + 1]?.at_ms ?? ended) - p.at_ms]));
    const line = { box: this.row.id, runtime: this.row.runtime, pooled: this.row.pooled ? true : undefined, phases_ms: took, ms: ended - (phases[0]?.at_ms ?? ended) };
    // The start log is the build's lines and the box's own output, scrubbed of its secrets.
    if (failedIn) log.warn({ ...line, failed_in: failedIn, start_log: this.start.log }, "box start failed");
    else log.info(line, "box ready");
  }

  private keep(lines: string[]): void {
    const log = this.start.log;
    for (const l of lines) {
      // A counter printed again and again ("(Reading database ... 45%") keeps its latest line.
      const percent = PERCENT_RE.exec(l)?.[1];
      if (percent !== undefined && PERCENT_RE.exec(log.at(-1) ?? "")?.[1] === percent) log.pop();
      log.push(cut(l));
    }
    if (log.length > START_LOG_LINES) log.splice(0, log.length - START_LOG_LINES);
  }

  private scrub(line: string): string {
    let out = line;
    for (const s of this.redact) if (s && out.includes(s)) out = out.split(s).join("[secret]");
    return out;
  }

  private async save(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.shown) return;
    const json = JSON.stringify(this.start);
    this.row.start_json = json;
    await db().updateTable("box").set({ start_json: json }).where("id", "=", this.row.id).execute();
    this.push();
  }

  /** Pushes now when the last push is old enough, else once when it is (trailing). */
  private pushSoon(): void {
    if (this.timer) return;
    const wait = this.pushedAt + PUSH_EVERY_MS - Date.now();
    if (wait <= 0) return this.push();
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.push();
    }, wait);
  }

  private push(): void {
    if (!this.shown) return;
    this.pushedAt = Date.now();
    boxChanges.emit("change", toBoxJson(this.row));
  }
}

function cut(line: string): string {
  return line.length > LINE_MAX ? `${line.slice(0, LINE_MAX - 1)}…` : line;
}

/** The row patch that marks a start that never ended (the server restarted) as failed. */
export function abandonedStart(row: BoxRow, at = Date.now()): Partial<BoxRow> {
  const start = row.start_json ? (JSON.parse(row.start_json) as BoxStart) : queuedStart(Number(row.created_at_ms));
  if (start.phase === "ready" || start.phase === "failed") return {};
  const failedIn = start.phases.at(-1)?.name ?? "queued";
  return { start_json: JSON.stringify({ ...start, phase: "failed", failed_in: failedIn, ended_ms: at, build: undefined }) };
}

// The engine's refusal of a container (runc's words) names paths on its host (a cgroup file
// under /sys/fs/cgroup/…/docker-<id>.scope, /var/lib/docker/…) and the container's full id:
// the engine's layout is not the caller's business, and the server log has the whole text.
const HOST_PATH = /(?<![\w.-])\/(?:sys|proc|var|run|dev|etc|home|root|tmp|opt|usr|srv|mnt)\/[^\s:"']*/g;

/** `detail` with the engine host's paths said as such and full container ids cut to Docker's short form. */
function withoutHostPaths(detail: string): string {
  return detail.replace(HOST_PATH, "(a path on the engine's host)").replace(/\b([0-9a-f]{12})[0-9a-f]{52}\b/g, "$1");
}
