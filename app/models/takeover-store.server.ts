import type { Selectable } from "kysely";
import type { TakeoverTable } from "../../db/schema";
import { onClusterMessage, publish } from "~/utils/cluster.server";
import { db, lockKey } from "~/utils/db.server";
import { log } from "~/utils/log.server";

// Who holds each screen, in the store (docs/decisions/0021): a takeover outlives the restart of
// every server, and every server sees the same one. Each server keeps a copy of the rows in
// memory, so the checks on every request (may this key drive screen 0?) cost nothing; a server
// that changes a row tells the others, which read it again. The box's own input guard stops the
// agent's input even in the moment before the news arrives.
//
// Every change is conditional on the row being the one the caller saw (its `since_ms` and
// holder): two servers ending one takeover end it once.

export interface Takeover {
  boxId: string;
  owner: string | null;
  screen: number;
  /** `user:<id>`, `key:<id>` or `server`: whose control sockets keep it alive. */
  by: string;
  exclusive: boolean;
  since_ms: number;
  /** It ends when this passes and no control connection of its holder keeps it (the grace period). */
  alive_until_ms: number;
  /** When the box's input guard was last raised. */
  guard_at_ms: number;
  /** The path in the box of the recording this takeover started (takeover-recording.server.ts). */
  recording: string | null;
}

const held = new Map<string, Takeover>();
type Listener = (key: { boxId: string; screen: number }, before: Takeover | undefined, after: Takeover | undefined) => void;
let onRemote: Listener = () => {};

export const keyOf = (boxId: string, screen: number) => `${boxId}/${screen}`;

function fromRow(r: Selectable<TakeoverTable>): Takeover {
  return {
    boxId: r.box_id,
    owner: r.owner,
    screen: Number(r.screen),
    by: r.by,
    exclusive: Number(r.exclusive) === 1,
    since_ms: Number(r.since_ms),
    alive_until_ms: Number(r.alive_until_ms),
    guard_at_ms: Number(r.guard_at_ms),
    recording: r.recording ?? null,
  };
}

/** This server's copy: the takeover of one screen. */
export function heldTakeover(boxId: string, screen: number): Takeover | undefined {
  return held.get(keyOf(boxId, screen));
}

/** This server's copy: every takeover. */
export function heldTakeovers(): Takeover[] {
  return [...held.values()];
}

/** Reads every takeover into this server's copy (at boot). */
export async function loadHeld(): Promise<Takeover[]> {
  const rows = await db().selectFrom("takeover").selectAll().execute();
  held.clear();
  for (const r of rows) held.set(keyOf(r.box_id, Number(r.screen)), fromRow(r));
  return [...held.values()];
}

/** Reads one screen's takeover again, into this server's copy; returns it as it was and is. */
export async function rereadHeld(boxId: string, screen: number): Promise<{ before?: Takeover; after?: Takeover }> {
  const r = await db().selectFrom("takeover").selectAll().where("box_id", "=", boxId).where("screen", "=", screen).executeTakeFirst();
  const k = keyOf(boxId, screen);
  const before = held.get(k);
  const after = r ? fromRow(r) : undefined;
  if (after) held.set(k, after);
  else held.delete(k);
  return { before, after };
}

/**
 * Takes (or changes) a screen's takeover in one transaction: `decide` sees the row as it is in the
 * store, and throws to refuse or returns the takeover to write.
 */
export async function writeHeld(
  boxId: string,
  screen: number,
  decide: (cur: Takeover | undefined) => Takeover,
): Promise<{ cur: Takeover | undefined; next: Takeover }> {
  const out = await db()
    .transaction()
    .execute(async (tx) => {
      await lockKey(tx, `takeover:${keyOf(boxId, screen)}`);
      const r = await tx.selectFrom("takeover").selectAll().where("box_id", "=", boxId).where("screen", "=", screen).executeTakeFirst();
      const cur = r ? fromRow(r) : undefined;
      const next = decide(cur);
      const row = {
        box_id: next.boxId,
        screen: next.screen,
        owner: next.owner,
        by: next.by,
        exclusive: next.exclusive ? 1 : 0,
        since_ms: next.since_ms,
        alive_until_ms: next.alive_until_ms,
        guard_at_ms: next.guard_at_ms,
        recording: next.recording,
      };
      const { box_id: _b, screen: _s, ...change } = row;
      await tx.insertInto("takeover").values(row).onConflict((oc) => oc.columns(["box_id", "screen"]).doUpdateSet(change)).execute();
      return { cur, next };
    });
  held.set(keyOf(boxId, screen), out.next);
  publish("takeover", { boxId, screen });
  return out;
}

/**
 * Deletes the takeover `t` if it is still that one (and, with `lapsedBy`, only if its grace ran
 * out by then). True when this call ended it; false when it was gone or changed (the copy is
 * read again).
 */
export async function deleteHeld(t: Takeover, lapsedBy?: number): Promise<boolean> {
  let q = db().deleteFrom("takeover").where("box_id", "=", t.boxId).where("screen", "=", t.screen).where("since_ms", "=", t.since_ms).where("by", "=", t.by);
  if (lapsedBy !== undefined) q = q.where("alive_until_ms", "<=", lapsedBy);
  const r = await q.executeTakeFirst();
  if (Number(r.numDeletedRows) === 1) {
    if (held.get(keyOf(t.boxId, t.screen))?.since_ms === t.since_ms) held.delete(keyOf(t.boxId, t.screen));
    publish("takeover", { boxId: t.boxId, screen: t.screen });
    return true;
  }
  await rereadHeld(t.boxId, t.screen);
  return false;
}

/** Moves the end of `t`'s grace to `until` (never earlier), while it is still that takeover. */
export async function keepHeld(t: Takeover, until: number): Promise<void> {
  await db()
    .updateTable("takeover")
    .set({ alive_until_ms: until })
    .where("box_id", "=", t.boxId)
    .where("screen", "=", t.screen)
    .where("since_ms", "=", t.since_ms)
    .where("alive_until_ms", "<", until)
    .execute();
  t.alive_until_ms = Math.max(t.alive_until_ms, until);
  const mine = held.get(keyOf(t.boxId, t.screen));
  if (mine?.since_ms === t.since_ms) mine.alive_until_ms = Math.max(mine.alive_until_ms, until);
}

/**
 * Claims raising `t`'s input guard now: true for the one server whose claim moved `guard_at_ms`
 * from what it read (the others see it moved, and leave it).
 */
export async function claimGuard(t: Takeover, now: number): Promise<boolean> {
  const won = await updateThisTakeover(t, { guard_at_ms: now }, t.guard_at_ms);
  if (won) {
    t.guard_at_ms = now;
    const mine = held.get(keyOf(t.boxId, t.screen));
    if (mine?.since_ms === t.since_ms) mine.guard_at_ms = now;
  } else await rereadHeld(t.boxId, t.screen);
  return won;
}

/** Notes the recording `t` started (while it is still that takeover), for whoever ends it. */
export async function setHeldRecording(t: Takeover, path: string): Promise<boolean> {
  const updated = await updateThisTakeover(t, { recording: path });
  const mine = held.get(keyOf(t.boxId, t.screen));
  if (mine?.since_ms === t.since_ms) mine.recording = path;
  t.recording = path;
  publish("takeover", { boxId: t.boxId, screen: t.screen });
  return updated;
}

/**
 * Updates the row of takeover `t` while it is still that takeover (same start), and, with
 * `guardAt`, only if its guard was last raised then; true when the row changed.
 */
async function updateThisTakeover(t: Takeover, set: { guard_at_ms?: number; recording?: string }, guardAt?: number): Promise<boolean> {
  let q = db().updateTable("takeover").set(set).where("box_id", "=", t.boxId).where("screen", "=", t.screen).where("since_ms", "=", t.since_ms);
  if (guardAt !== undefined) q = q.where("guard_at_ms", "=", guardAt);
  return Number((await q.executeTakeFirst()).numUpdatedRows) === 1;
}

/** What to do when another server changed a takeover (close this server's sockets, tell the console). */
export function onRemoteTakeover(listener: Listener): void {
  onRemote = listener;
}

onClusterMessage("takeover", (payload) => {
  const { boxId, screen } = payload as { boxId: string; screen: number };
  void rereadHeld(boxId, screen)
    .then(({ before, after }) => onRemote({ boxId, screen }, before, after))
    .catch((err) => log.error({ err }, "reading a takeover another server changed failed"));
});
