import { randomBytes } from "node:crypto";
import { notFound } from "~/utils/api-error.server";
import { RECORDING_PART_BYTES } from "../../db/migrations/0021-recording-parts";
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

/** Keeps a recording's bytes, in parts (migration 0021); answers its new id. */
export async function storeRecording(r: { box_id: string; screen: number; fps: number; started_at_ms: number; stopped_at_ms: number; path: string; data: Buffer }): Promise<string> {
  const id = `rec_${randomBytes(8).toString("hex")}`;
  const { data, ...row } = r;
  await db()
    .transaction()
    .execute(async (tx) => {
      await tx.insertInto("trace_recording").values({ id, ...row, bytes: data.length }).execute();
      for (let n = 0; n * RECORDING_PART_BYTES < data.length; n++) {
        await tx
          .insertInto("trace_recording_part")
          .values({ recording_id: id, n, data: data.subarray(n * RECORDING_PART_BYTES, (n + 1) * RECORDING_PART_BYTES) })
          .execute();
      }
    });
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

/**
 * One kept recording, or not_found: what it is and its size, without its bytes (up to 64 MB,
 * which a player asks for a range at a time: readRecordingPart).
 */
export async function recordingOf(boxId: string, id: string): Promise<{ json: RecordingJson; size: number }> {
  const row = ID_RE.test(id)
    ? await db()
        .selectFrom("trace_recording")
        .select(["id", "screen", "fps", "started_at_ms", "stopped_at_ms", "bytes", "path"])
        .where("box_id", "=", boxId)
        .where("id", "=", id)
        .executeTakeFirst()
    : undefined;
  if (!row) throw notFound(`the trace of box ${boxId} has no recording ${id}`);
  return { json: { ...row, duration_ms: row.stopped_at_ms - row.started_at_ms }, size: Number(row.bytes) };
}

/**
 * `length` bytes of a kept recording (found by recordingOf) from `start`: only the parts they
 * fall in are read, so a range costs its size, not the recording's. Empty when a part is gone
 * (the recording was pruned meanwhile).
 */
export async function readRecordingPart(id: string, start: number, length: number): Promise<Buffer> {
  if (length <= 0) return Buffer.alloc(0);
  const first = Math.floor(start / RECORDING_PART_BYTES);
  const last = Math.floor((start + length - 1) / RECORDING_PART_BYTES);
  const rows = await db()
    .selectFrom("trace_recording_part")
    .select(["n", "data"])
    .where("recording_id", "=", id)
    .where("n", ">=", first)
    .where("n", "<=", last)
    .orderBy("n")
    .execute();
  if (rows.length !== last - first + 1) return Buffer.alloc(0);
  const at = start - first * RECORDING_PART_BYTES;
  const bytes = rows.length === 1 ? Buffer.from(rows[0]!.data) : Buffer.concat(rows.map((r) => Buffer.from(r.data)));
  return bytes.subarray(at, at + length);
}

/**
 * Prunes with the trace: a recording whose stop is older than the entries kept (its entries are
 * gone), or whose box was removed before `removed`, its parts with it (on delete cascade).
 * Counts what it removed.
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

