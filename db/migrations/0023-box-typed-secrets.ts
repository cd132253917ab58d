import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";

// The secret values typed into a box (fill, type with `secret_ref`, seed 004), sealed as the
// secrets are (app/utils/seal.server.ts). Answers about the box mask them even after the secret
// changes or goes (app/models/secret-mask.server.ts), and that must hold after a restart and on
// every server of a cluster (ADR 0021): kept in memory only, it did not. `tag` is a keyed digest
// of the value (a value is kept once per box); the rows go with their box (on delete cascade).
export const boxTypedSecrets: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("box_typed_secret")
      .addColumn("box_id", "text", (c) => c.notNull().references("box.id").onDelete("cascade"))
      .addColumn("tag", "text", (c) => c.notNull())
      .addColumn("sealed", "text", (c) => c.notNull())
      .addColumn("created_at_ms", "bigint", (c) => c.notNull())
      .addPrimaryKeyConstraint("box_typed_secret_pk", ["box_id", "tag"])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable("box_typed_secret").execute();
  },
};
