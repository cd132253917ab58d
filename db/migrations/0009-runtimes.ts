import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";

// Runtimes an operator added (POST /v1/runtimes; the built-in `docker` is not stored) with their
// secrets sealed as one value, and the images the server builds or was asked to build, so a
// queued build outlives a restart (ADR 0017).
export const runtimes: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("runtime")
      .addColumn("name", "text", (c) => c.primaryKey())
      .addColumn("provider", "text", (c) => c.notNull())
      .addColumn("fields_json", "text", (c) => c.notNull())
      .addColumn("secret_names", "text", (c) => c.notNull())
      .addColumn("sealed", "text")
      .addColumn("created_at_ms", "bigint", (c) => c.notNull())
      .addColumn("updated_at_ms", "bigint", (c) => c.notNull())
      .execute();
    await db.schema
      .createTable("image")
      .addColumn("runtime", "text", (c) => c.notNull())
      .addColumn("digest", "text", (c) => c.notNull())
      .addColumn("image", "text", (c) => c.notNull())
      .addColumn("state", "text", (c) => c.notNull())
      .addColumn("reason", "text")
      .addColumn("request_json", "text", (c) => c.notNull())
      .addColumn("spec_digest", "text")
      .addColumn("owner", "text")
      .addColumn("created_at_ms", "bigint", (c) => c.notNull())
      .addColumn("built_at_ms", "bigint")
      .addPrimaryKeyConstraint("image_pk", ["runtime", "digest"])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable("image").execute();
    await db.schema.dropTable("runtime").execute();
  },
};
