import { randomBytes } from "node:crypto";
import { notFound } from "~/utils/api-error.server";
import { db } from "~/utils/db.server";

// The recordings a trace keeps (recording.server.ts copies them out of boxes): the store's side
// alone, so that pruning (job.server.ts) and the routes reach it without the box models.

const ID_RE = /^rec_[0-9a-f]{16}$/;

export interface RecordingJson {
  id: string;
  screen: number;
  fps: number;
  started_at_ms: number;
  stopped_at_ms: number;
  duration_ms: number;
  bytes: number;
  path: string;
}

/** Keeps a recording's bytes; answers its new id. */
export async function storeRecording(r: { box_id: string; screen: number; fps: number; started_at_ms: number; stopped_at_ms: number; path: string; data: Buffer }): Promise<string> {
  const id = `rec_${randomBytes(8).toString("hex")}`;
  await db().insertInto("trace_recording").values({ id, ...r, bytes: r.data.length }).execute();
  return id;
}

/** The box's kept recordings, oldest first (the caller checked that it may read the trace). */
export async function listRecordings(boxId: string): Promise<RecordingJson[]> {
  const rows = await db()
    .selectFrom("trace_recording")
    .select(["id", "screen", "fps", "started_at_ms", "stopped_at_ms", "bytes", "path"])
    .where("box_id", "=", boxId)
    .orderBy("started_at_ms")
    .execute();
  return rows.map((r) => ({ ...r, duration_ms: r.stopped_at_ms - r.started_at_ms }));
}

/** One kept recording's bytes, or not_found. */
export async function readRecording(boxId: string, id: string): Promise<{ data: Buffer; json: RecordingJson }> {
  const row = ID_RE.test(id)
    ? await db().selectFrom("trace_recording").selectAll().where("box_id", "=", boxId).where("id", "=", id).executeTakeFirst()
    : undefined;
  if (!row) throw notFound(`the trace of box ${boxId} has no recording ${id}`);
  const { data, box_id: _, ...json } = row;
  return { data: Buffer.from(data), json: { ...json, duration_ms: row.stopped_at_ms - row.started_at_ms } };
}

/**
 * Prunes with the trace: a recording whose stop is older than the entries kept (its entries are
 * gone), or whose box was removed before `removed`. Counts what it removed.
 */
export async function pruneRecordings(cutoffs: { entries: number; removed: number }): Promise<number> {
  const gone = db()
    .selectFrom("box")
    .select("id")
    .where("removed_at_ms", "is not", null)
    .where("removed_at_ms", "<", cutoffs.removed);
  const r = await db()
    .deleteFrom("trace_recording")
    .where((eb) => eb.or([eb("stopped_at_ms", "<", cutoffs.entries), eb("box_id", "in", gone)]))
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

