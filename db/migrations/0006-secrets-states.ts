import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";

// A workspace's named secrets (typed into pages by `secret_ref`, seed 004) and its saved browser
// states (seed: Browser state). Both hold values sealed with a key derived from the server key
// (app/utils/seal.server.ts), never the plain value. `owner` is a workspace id, or "server" for
// the server token's own (workspace ids start with "ws_", so the two never meet).
export const secretsStates: Migration = {
  async up(db: Kysely<any>) {
    for (const table of ["secrets", "browser_states"]) {
      let t = db.schema
        .createTable(table)
        .addColumn("owner", "text", (c) => c.notNull())
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("sealed", "text", (c) => c.notNull())
        .addColumn("created_at_ms", "bigint", (c) => c.notNull())
        .addColumn("updated_at_ms", "bigint", (c) => c.notNull());
      // A state's size (bytes of its JSON) is listed; a secret's length is not told.
      if (table === "browser_states") t = t.addColumn("size", "integer", (c) => c.notNull());
      await t.addPrimaryKeyConstraint(`${table}_pk`, ["owner", "name"]).execute();
    }
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable("browser_states").execute();
    await db.schema.dropTable("secrets").execute();
  },
};
