import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";
import { bytesType } from "../dialect";

// Screen recordings kept with the trace (issue 18): a recording stopped in a box is copied out of
// it into the store, so it outlives the box as its trace does, plays in the console's trace page
// and goes when the trace is pruned. The bytes live in the row (a blob on SQLite, bytea on
// PostgreSQL): every server of a shared database can then serve them, as it serves frames.
export const recordings: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("trace_recording")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("box_id", "text", (c) => c.notNull())
      .addColumn("screen", "integer", (c) => c.notNull())
      .addColumn("fps", "integer", (c) => c.notNull())
      .addColumn("started_at_ms", "bigint", (c) => c.notNull())
      .addColumn("stopped_at_ms", "bigint", (c) => c.notNull())
      .addColumn("bytes", "bigint", (c) => c.notNull())
      // Where the file was in the box (what the stop step answered).
      .addColumn("path", "text", (c) => c.notNull())
      .addColumn("data", bytesType(db), (c) => c.notNull())
      .execute();
    await db.schema.createIndex("trace_recording_box").on("trace_recording").columns(["box_id", "started_at_ms"]).execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable("trace_recording").execute();
  },
};
