import { type Kysely, sql } from "kysely";
import type { Migration } from "kysely/migration";
import { bytesType } from "../dialect";

// A kept recording's bytes in parts of RECORDING_PART_BYTES (was: one blob in its row, 0017).
// A player reads a recording a range at a time, and neither engine reads part of a big value:
// SQLite's substr() loads the whole blob first (~170 ms for 55 MB, holding the event loop, as
// better-sqlite3 is synchronous), and PostgreSQL slices only a value stored uncompressed. In
// parts, a range reads the one or two parts it covers. Part `n` holds bytes
// [n × RECORDING_PART_BYTES, (n + 1) × RECORDING_PART_BYTES); every part but the last is full.
// The parts go with their recording (on delete cascade: SQLite runs with foreign_keys = ON).

/** The size of every part but a recording's last. Stored data depends on it: never change it. */
export const RECORDING_PART_BYTES = 1024 * 1024;

export const recordingParts: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("trace_recording_part")
      .addColumn("recording_id", "text", (c) => c.notNull().references("trace_recording.id").onDelete("cascade"))
      .addColumn("n", "integer", (c) => c.notNull())
      .addColumn("data", bytesType(db), (c) => c.notNull())
      .addPrimaryKeyConstraint("trace_recording_part_pk", ["recording_id", "n"])
      .execute();
    // The recordings kept so far, one at a time (each up to 64 MB).
    const ids = await db.selectFrom("trace_recording").select("id").execute();
    for (const { id } of ids) {
      const row = await db.selectFrom("trace_recording").select("data").where("id", "=", id).executeTakeFirstOrThrow();
      const data = Buffer.from(row.data as Uint8Array);
      for (let n = 0; n * RECORDING_PART_BYTES < data.length; n++) {
        const part = data.subarray(n * RECORDING_PART_BYTES, (n + 1) * RECORDING_PART_BYTES);
        await db.insertInto("trace_recording_part").values({ recording_id: id, n, data: part }).execute();
      }
    }
    await db.schema.alterTable("trace_recording").dropColumn("data").execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable("trace_recording").addColumn("data", bytesType(db), (c) => c.notNull().defaultTo(sql`''`)).execute();
    const ids = await db.selectFrom("trace_recording").select("id").execute();
    for (const { id } of ids) {
      const parts = await db.selectFrom("trace_recording_part").select("data").where("recording_id", "=", id).orderBy("n").execute();
      const data = Buffer.concat(parts.map((p) => Buffer.from(p.data as Uint8Array)));
      await db.updateTable("trace_recording").set({ data }).where("id", "=", id).execute();
    }
    await db.schema.dropTable("trace_recording_part").execute();
  },
};
