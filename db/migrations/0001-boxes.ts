import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";
import { autoIncrementKey } from "../dialect";

export const boxes: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("box")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("owner", "text")
      .addColumn("runtime", "text", (c) => c.notNull())
      .addColumn("runtime_ref", "text")
      .addColumn("spec_digest", "text", (c) => c.notNull())
      .addColumn("spec_json", "text", (c) => c.notNull())
      .addColumn("placement_json", "text", (c) => c.notNull())
      .addColumn("image", "text")
      .addColumn("state", "text", (c) => c.notNull())
      .addColumn("reason", "text")
      .addColumn("screens", "integer", (c) => c.notNull())
      .addColumn("width", "integer", (c) => c.notNull())
      .addColumn("height", "integer", (c) => c.notNull())
      .addColumn("persistent", "integer", (c) => c.notNull().defaultTo(0))
      .addColumn("created_at_ms", "bigint", (c) => c.notNull())
      .addColumn("expires_at_ms", "bigint", (c) => c.notNull())
      .addColumn("idle_timeout_secs", "integer")
      .addColumn("last_used_ms", "bigint", (c) => c.notNull())
      .addColumn("removed_at_ms", "bigint")
      .execute();
    await db.schema.createIndex("box_owner_idx").on("box").columns(["owner", "created_at_ms"]).execute();

    await db.schema
      .createTable("event")
      .addColumn("seq", "integer", autoIncrementKey(db))
      .addColumn("at_ms", "bigint", (c) => c.notNull())
      .addColumn("kind", "text", (c) => c.notNull())
      .addColumn("owner", "text")
      .addColumn("box_id", "text")
      .addColumn("runtime", "text")
      .addColumn("data_json", "text")
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable("event").execute();
    await db.schema.dropTable("box").execute();
  },
};
