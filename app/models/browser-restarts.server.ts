import { orAfter } from "~/runtime/engine-bound.server";
import { db } from "~/utils/db.server";
import { log } from "~/utils/log.server";
import { SERVER_ITSELF, attribution } from "./actor-name.server";
import { type BoxRow, loadRow, onBeforeRemove, onBeforeStop, runtimeOf } from "./box-record.server";
import { recordEvent } from "./event.server";
import { readTrace, recordEntries } from "./trace.server";
import type { TraceEntryInput } from "./trace-types.server";

// A screen's browser that quit (status 0) is started again by the box's entrypoint, on a blank
// tab, or after a pause when it quit too often (images/x11/entrypoint.sh): its tabs are gone. The
// trace and the event log say so, or a person scrubbing the trace sees pages vanish with no entry
// saying why. A box has no channel to the server (ADR 0007), so the server reads the lines the
// entrypoint already prints for it from the box's log, as the runtime keeps it (`logs`): at each
// reaper sweep, when the trace is read, and before a box stops or goes. How far it has read is
// kept in the store per box (browser_restart_seen: the time of the last line written), claimed by
// one conditional write, so each line is written once: not twice by two server processes reading
// at once, nor again by a server that restarted and reads the same log. A crash writes nothing
// here: the entrypoint stops the box, whose `stopped` entry says why (box-sync.server.ts).
// Anything in the box could print such a line (a command run as root through `exec` writes to
// PID 1's stdout): it writes only into its own box's trace, and only as the entrypoint could. A
// line dated after now is not read until its time comes (the trace keeps at_ms in order: one
// dated 2099 put every later entry of the box, a person's takeover too, in 2099, out of the
// prune's reach); and a screen writes at most PER_SCREEN_MINUTE lines a minute, the rest skipped
// (each is an entry, an event and a webhook: one exec printing 300 lines wrote 300 of each).

/** Lines of the box's log read each time: a restart prints one, the box's start some 40. */
const LOG_TAIL = 300;
/** How long a reader of the trace waits for the box's log before reading without it. */
const READ_WAIT_MS = 3000;
/** How long a sweep waits for one box's log. */
const SWEEP_BOX_MS = 5000;
/**
 * The lines a screen writes in any minute at most. The entrypoint starts a browser again at once
 * 5 times a minute (HOLM_BROWSER_RESTARTS_PER_MIN), then prints one pause and its end.
 */
export const PER_SCREEN_MINUTE = 12;

/** One restart (or pause) of a screen's browser as the entrypoint logged it. */
export interface BrowserQuit {
  /** When the entrypoint logged it (the box's clock, ms since the epoch). */
  at_ms: number;
  screen: number;
  /** `restarted`: started again at once; `paused`: quit too often, started again after a pause; `resumed`: that pause ended. */
  kind: "restarted" | "paused" | "resumed";
  /** The quits of that screen's browser within the last minute, this one included. */
  quits_in_minute?: number;
  /** `paused`: in how many seconds it is started again. */
  restart_in_s?: number;
}

// The entrypoint's `log`: "2026-12-07T23:31:53.123 +12.345s holm: …" (UTC: boxes set no TZ), and
// its lines for a browser (X11 names it by display, :99 + screen; Wayland by screen). A part's
// last words that it quotes are indented ("holm:   chromium :99: …") and never match.
const LINE = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}) \+\d+\.\d{3}s holm: (.*)$/;
const QUIT = /^chromium (?::(\d{1,3})|(\d{1,2})) quit \(status 0\); (?:starting it again \(restart (\d+) within a minute\)|started again (\d+) times within a minute already, so again in (\d+) s)$/;
const RESUMED = /^screen (\d{1,2}): the pause is over; starting its browser again$/;

/** The browser restarts in a box's log lines, oldest first. */
export function browserQuitsIn(lines: string[]): BrowserQuit[] {
  const out: BrowserQuit[] = [];
  for (const line of lines) {
    const m = LINE.exec(line);
    if (!m) continue;
    const at_ms = Date.parse(`${m[1]}Z`);
    if (!Number.isFinite(at_ms)) continue;
    const q = QUIT.exec(m[2]!);
    if (q) {
      const screen = q[1] !== undefined ? Number(q[1]) - 99 : Number(q[2]);
      if (screen < 0) continue;
      if (q[3] !== undefined) out.push({ at_ms, screen, kind: "restarted", quits_in_minute: Number(q[3]) });
      else out.push({ at_ms, screen, kind: "paused", quits_in_minute: Number(q[4]) + 1, restart_in_s: Number(q[5]) });
      continue;
    }
    const r = RESUMED.exec(m[2]!);
    if (r) out.push({ at_ms, screen: Number(r[1]), kind: "resumed" });
  }
  return out;
}

/**
 * The lines to write of `fresh` (oldest first), at most PER_SCREEN_MINUTE a screen in any minute
 * counting those `recent` says were written (box's time, per screen; updated with the ones kept).
 */
export function withinRate(fresh: BrowserQuit[], recent: Map<number, number[]>): BrowserQuit[] {
  const out: BrowserQuit[] = [];
  for (const q of fresh) {
    const times = (recent.get(q.screen) ?? []).filter((t) => t > q.at_ms - 60_000);
    if (times.length < PER_SCREEN_MINUTE) {
      times.push(q.at_ms);
      out.push(q);
    }
    recent.set(q.screen, times);
  }
  return out;
}

/** Per box, each screen's lines written in the last minute by this process (its own claims). */
const written = new Map<string, Map<number, number[]>>();

/** The trace entry of one restart (its `at_ms` the box's, clamped by the store to the trace's order). */
function entryOf(q: BrowserQuit, by: Record<string, unknown>): TraceEntryInput {
  if (q.kind === "paused") {
    return { actor: "server", event: "browser_paused", screen: q.screen, at_ms: q.at_ms, data: { quits_in_minute: q.quits_in_minute, restart_in_s: q.restart_in_s, ...by } };
  }
  const data = q.kind === "resumed" ? { after_pause: true } : { quits_in_minute: q.quits_in_minute };
  return { actor: "server", event: "browser_restarted", screen: q.screen, at_ms: q.at_ms, data: { ...data, ...by } };
}

/** How far the box's log was read (the time of its last restart line written), or undefined when never. */
async function seenThrough(boxId: string): Promise<number | undefined> {
  const row = await db().selectFrom("browser_restart_seen").select("through_ms").where("box_id", "=", boxId).executeTakeFirst();
  return row ? Number(row.through_ms) : undefined;
}

/** Moves the mark from `from` to `to`; true for the one caller whose write did it. */
async function claim(boxId: string, from: number | undefined, to: number): Promise<boolean> {
  if (from === undefined) {
    const made = await db()
      .insertInto("browser_restart_seen")
      .values({ box_id: boxId, through_ms: to })
      .onConflict((oc) => oc.column("box_id").doNothing())
      .executeTakeFirst();
    return Number(made.numInsertedOrUpdatedRows ?? 0) === 1;
  }
  const moved = await db().updateTable("browser_restart_seen").set({ through_ms: to }).where("box_id", "=", boxId).where("through_ms", "=", from).executeTakeFirst();
  return Number(moved.numUpdatedRows) === 1;
}

/**
 * Writes the browser restarts the box's log has and the trace does not yet: trace entries
 * (`browser_restarted`, `browser_paused`) and events (`screen.browser_restarted`,
 * `screen.browser_paused`). Returns how many. Never throws: a log that cannot be read now is read
 * at the next sweep.
 */
export async function noteBrowserRestarts(row: BoxRow): Promise<number> {
  // A pool box is no one's until claimed, and has no trace (ADR 0014).
  if (!row.runtime_ref || row.pooled || row.removed_at_ms !== null) return 0;
  try {
    const now = Date.now();
    const quits = browserQuitsIn(await runtimeOf(row).logs(row.runtime_ref, LOG_TAIL)).filter((q) => q.screen < row.screens && q.at_ms <= now);
    if (quits.length === 0) return 0;
    const seen = await seenThrough(row.id);
    // Never before the trace began: a memory store's trace of a box taken back after a restart
    // begins with `adopted` and has none of what the box logged before.
    const first = (await readTrace(row.id, { after: -1, limit: 1 })).entries[0]?.at_ms ?? 0;
    const fresh = quits.filter((q) => q.at_ms > Math.max(seen ?? -1, first));
    if (fresh.length === 0) return 0;
    // Past every fresh line, those skipped too: a line skipped is never written later.
    if (!(await claim(row.id, seen, fresh[fresh.length - 1]!.at_ms))) return 0;
    const recent = written.get(row.id) ?? new Map<number, number[]>();
    written.delete(row.id);
    written.set(row.id, recent);
    if (written.size > 4096) written.delete(written.keys().next().value as string);
    const kept = withinRate(fresh, recent);
    if (kept.length < fresh.length) log.warn({ box: row.id, lines: fresh.length, kept: kept.length }, "more browser restarts in a box's log than its entrypoint prints: the rest skipped");
    if (kept.length === 0) return 0;
    const by: Record<string, unknown> = { ...(await attribution(SERVER_ITSELF)).data };
    await recordEntries(row.id, kept.map((q) => entryOf(q, by)));
    for (const q of kept) {
      const kind = q.kind === "paused" ? "screen.browser_paused" : "screen.browser_restarted";
      const data = q.kind === "paused" ? { screen: q.screen, quits_in_minute: q.quits_in_minute, restart_in_s: q.restart_in_s } : q.kind === "resumed" ? { screen: q.screen, after_pause: true } : { screen: q.screen, quits_in_minute: q.quits_in_minute };
      await recordEvent(kind, { owner: row.owner, box_id: row.id, runtime: row.runtime, data });
    }
    log.info({ box: row.id, restarts: kept.length }, "a screen's browser quit and was started again");
    return kept.length;
  } catch (err) {
    // Read again at the next sweep; an engine that does not answer is the reaper's to report.
    log.debug({ err, box: row.id }, "the box's browser restarts could not be read from its log");
    return 0;
  }
}

/**
 * Before a box stops or goes (its log goes with the container): its restarts so far. Registered
 * at boot before the profile's flush (profile-flush.server.ts), whose own closing of the browser
 * it then skips (passBrowserRestarts).
 */
export function registerBrowserRestarts(): void {
  const before = async (row: BoxRow) => void (await orAfter(noteBrowserRestarts(row), SWEEP_BOX_MS, 0));
  onBeforeStop(before);
  onBeforeRemove(before);
}

/** Each running box's restarts, a box at a time, each bounded: the server's loop (server/loops.ts) and /v1/jobs/reap. */
export async function noteAllBrowserRestarts(): Promise<number> {
  const rows = await db()
    .selectFrom("box")
    .selectAll()
    .where("removed_at_ms", "is", null)
    .where("pooled", "=", 0)
    .where("state", "in", ["ready", "paused"])
    .execute();
  let n = 0;
  for (const row of rows) n += await orAfter(noteBrowserRestarts(row), SWEEP_BOX_MS, 0);
  return n;
}

/** When each box's log was last read for a reader of its trace (this process). */
const readFor = new Map<string, number>();
/** A trace page polled by the console reads the box's log at most this often. */
const READ_EVERY_MS = 1000;

/** Before a box's trace is read: its restarts so far, waited for a moment at most. */
export async function noteBrowserRestartsOf(boxId: string): Promise<void> {
  const now = Date.now();
  if (now - (readFor.get(boxId) ?? 0) < READ_EVERY_MS) return;
  readFor.delete(boxId);
  readFor.set(boxId, now);
  if (readFor.size > 4096) readFor.delete(readFor.keys().next().value as string);
  const row = await loadRow(boxId);
  if (!row || (row.state !== "ready" && row.state !== "paused" && row.state !== "stopped")) return;
  await orAfter(noteBrowserRestarts(row), READ_WAIT_MS, 0);
}

/**
 * Skips what the box's log says up to now: the quit the server itself caused by closing a
 * profile's browser before a stop (profile-flush.server.ts) is part of the stop, not a restart.
 */
export async function passBrowserRestarts(boxId: string, through = Date.now()): Promise<void> {
  const seen = await seenThrough(boxId);
  if (seen !== undefined && seen >= through) return;
  await db()
    .insertInto("browser_restart_seen")
    .values({ box_id: boxId, through_ms: through })
    .onConflict((oc) => oc.column("box_id").doUpdateSet({ through_ms: through }))
    .execute();
}
