import { EventEmitter } from "node:events";
import { z } from "zod";
import { type ForkOrigin, type ForkReplay, type ForkReplayPush, REPLAY_ENDED_EVENT, type ReplaySkip } from "~/protocol/fork-replay";
import { readTrace, recordEntry } from "./trace.server";
import { log } from "~/utils/log.server";

// A fork's replay while it runs and after: kept in memory from the fork's start (so the console
// and an agent polling a 202 fork can follow it), pushed on every change (server/realtime.ts
// sends it to the owner's room), and recorded at its end as a `replay_ended` entry of the new
// box's trace, so the report outlives the process. Not a column of the box: the launch writes
// the box's row while the replay runs, and a read-modify-write of one column from two places
// would lose updates.

interface Live {
  owner: string | null;
  v: number;
  from: ForkOrigin;
  replay: ForkReplay;
}

const live = new Map<string, Live>();
/** Replays kept in memory once done (those running are always kept). */
const KEEP_DONE = 256;
let version = 0;

/** Every change of a replay, as pushed: `{box_id, v, replay}` with the owner for routing. */
export const forkChanges = new EventEmitter();
forkChanges.setMaxListeners(0);

export type ForkChange = ForkReplayPush & { owner: string | null };

const copy = (r: ForkReplay): ForkReplay => ({ ...r, skipped: r.skipped.slice() });

function publish(boxId: string, rec: Live) {
  rec.v = ++version;
  const change: ForkChange = { box_id: boxId, owner: rec.owner, v: rec.v, replay: copy(rec.replay) };
  forkChanges.emit("change", change);
}

function trim() {
  let done = 0;
  for (const rec of live.values()) if (rec.replay.done) done++;
  for (const [id, rec] of live) {
    if (done <= KEEP_DONE) break;
    if (rec.replay.done) {
      live.delete(id);
      done--;
    }
  }
}

/** The replay of `boxId` begins: `total` steps to do; the box may still be starting. */
export function beginReplay(boxId: string, owner: string | null, from: ForkOrigin, total: number, skipped: ReplaySkip[]): void {
  const rec: Live = { owner, v: 0, from, replay: { total, attempted: 0, ok: 0, done: false, stopped_at: null, truncated: false, skipped } };
  live.set(boxId, rec);
  trim();
  publish(boxId, rec);
}

/** A batch of the replay ran: the counts so far. */
export function stepReplay(boxId: string, counts: { attempted: number; ok: number }): void {
  const rec = live.get(boxId);
  if (!rec || rec.replay.done) return;
  rec.replay.attempted = counts.attempted;
  rec.replay.ok = counts.ok;
  publish(boxId, rec);
}

/** The replay ended: the final report is recorded in the fork's trace, then pushed. */
export async function endReplay(
  boxId: string,
  report: { attempted: number; ok: number; stopped_at: number | null; truncated: boolean; skipped: ReplaySkip[]; reason?: string },
): Promise<void> {
  const rec = live.get(boxId);
  const total = rec?.replay.total ?? report.attempted;
  const replay: ForkReplay = { total, ...report, done: true };
  if (replay.reason === undefined) delete replay.reason;
  try {
    await recordEntry(boxId, { actor: "server", event: REPLAY_ENDED_EVENT, data: { ...replay } });
  } catch (err) {
    // Still pushed and kept in memory: the people watching see the end either way.
    log.error({ err }, `fork ${boxId}: recording the replay's end failed`);
  }
  const next: Live = rec ?? { owner: null, v: 0, from: { box: "", up_to: null }, replay };
  next.replay = replay;
  live.set(boxId, next);
  trim();
  publish(boxId, next);
}

/** The replays the server knows in memory for one workspace (pushed to a socket as it connects). */
export function forkReplaysOf(owner: string): ForkReplayPush[] {
  const out: ForkReplayPush[] = [];
  for (const [id, rec] of live) if (rec.owner === owner) out.push({ box_id: id, v: rec.v, replay: copy(rec.replay) });
  return out;
}

const Skip = z.object({ seq: z.number(), kind: z.string(), why: z.string() });
const Ended = z.object({
  total: z.number().int().min(0),
  attempted: z.number().int().min(0),
  ok: z.number().int().min(0),
  stopped_at: z.number().nullable(),
  truncated: z.boolean(),
  skipped: z.array(Skip),
  reason: z.string().optional(),
});

/**
 * A fork's origin and replay, or undefined for a box that is not a fork. From memory while the
 * server knows it; else from the box's trace: its `forked_from` entry and its `replay_ended`
 * entry, or (a fork whose replay never ended here: the server stopped meanwhile) a report that
 * says so. The caller has checked that it may see the box.
 */
export async function forkOf(boxId: string): Promise<{ from: ForkOrigin; replay: ForkReplay } | undefined> {
  const rec = live.get(boxId);
  if (rec) return { from: { ...rec.from }, replay: copy(rec.replay) };
  // forked_from comes right after box_created (and the launch's first entries).
  const head = await readTrace(boxId, { limit: 8 });
  const entry = head.entries.find((e) => e.event === "forked_from");
  if (!entry) return undefined;
  const data = entry.data ?? {};
  const from: ForkOrigin = { box: String(data.box ?? ""), up_to: typeof data.up_to === "number" ? data.up_to : null };
  let after: number | undefined = entry.seq;
  for (;;) {
    const page = await readTrace(boxId, { after, limit: 500 });
    const ended = page.entries.find((e) => e.event === REPLAY_ENDED_EVENT);
    const parsed = ended ? Ended.safeParse(ended.data) : undefined;
    if (parsed?.success) {
      const replay: ForkReplay = { ...parsed.data, done: true };
      live.set(boxId, { owner: null, v: ++version, from, replay });
      trim();
      return { from: { ...from }, replay: copy(replay) };
    }
    if (page.next === null || page.entries.length === 0) break;
    after = page.next;
  }
  const replay: ForkReplay = {
    total: typeof data.steps === "number" ? data.steps : 0,
    attempted: 0,
    ok: 0,
    done: true,
    stopped_at: null,
    truncated: true,
    skipped: [],
    reason: "the server stopped before this replay ended, so its report was not kept",
  };
  return { from, replay };
}

/** A box's JSON with holm's `replay` when the box is a fork (GET /v1/boxes/{id} only). */
export async function withForkReplay<B extends { id: string }>(box: B): Promise<B & { replay?: ForkReplay }> {
  const fork = await forkOf(box.id);
  return fork ? { ...box, replay: fork.replay } : box;
}
