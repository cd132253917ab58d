import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";

// Which workspace made the server build which image, for the per-workspace build limit
// (app/models/quota.server.ts). Rows older than the limit's window no longer count.
export const imageBuilds: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("image_build")
      .addColumn("owner", "text", (c) => c.notNull())
      .addColumn("image", "text", (c) => c.notNull())
      .addColumn("at_ms", "bigint", (c) => c.notNull())
      .execute();
    await db.schema.createIndex("image_build_owner_idx").on("image_build").columns(["owner", "at_ms"]).execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable("image_build").execute();
  },
};
