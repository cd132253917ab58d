import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";

// The durable trace store (HOLM_STORAGE_BACKEND=local). The memory backend keeps traces in plain
// structures and leaves these tables empty. Frame bytes live in files, not here.
export const trace: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("trace")
      .addColumn("box_id", "text", (c) => c.primaryKey())
      .addColumn("next_seq", "integer", (c) => c.notNull())
      .addColumn("started_at_ms", "bigint", (c) => c.notNull())
      .addColumn("last_at_ms", "bigint", (c) => c.notNull())
      .execute();

    await db.schema
      .createTable("trace_entry")
      .addColumn("box_id", "text", (c) => c.notNull())
      .addColumn("seq", "integer", (c) => c.notNull())
      .addColumn("at_ms", "bigint", (c) => c.notNull())
      .addColumn("actor", "text", (c) => c.notNull())
      .addColumn("event", "text", (c) => c.notNull())
      .addColumn("screen", "integer")
      .addColumn("frame", "text")
      .addColumn("data_json", "text")
      .addPrimaryKeyConstraint("trace_entry_pk", ["box_id", "seq"])
      .execute();
    // Pruning by age, and "does this box's trace refer to this frame / does any trace".
    await db.schema.createIndex("trace_entry_at_idx").on("trace_entry").column("at_ms").execute();
    await db.schema
      .createIndex("trace_entry_frame_idx")
      .on("trace_entry")
      .columns(["frame", "box_id"])
      .where("frame", "is not", null)
      .execute();

    await db.schema
      .createTable("trace_frame")
      .addColumn("hash", "text", (c) => c.primaryKey())
      .addColumn("bytes", "integer", (c) => c.notNull())
      .addColumn("created_at_ms", "bigint", (c) => c.notNull())
      .addColumn("last_ref_ms", "bigint", (c) => c.notNull())
      .execute();
    await db.schema.createIndex("trace_frame_ref_idx").on("trace_frame").column("last_ref_ms").execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable("trace_frame").execute();
    await db.schema.dropTable("trace_entry").execute();
    await db.schema.dropTable("trace").execute();
  },
};
