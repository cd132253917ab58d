import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";

// Named browser profiles (`placement.profile`, issue 18): one row per workspace and name, with
// the engine volume that keeps Chromium's profile between boxes and the box that last took it.
// Whether that box still holds it is read from the box's own row (live or not), so nothing has
// to release a profile when a box goes: a removed, gone or failed box holds nothing.
export const profiles: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("browser_profile")
      // The workspace's id, or "" for the server's own (the server token and open mode).
      .addColumn("owner", "text", (c) => c.notNull())
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("runtime", "text", (c) => c.notNull())
      .addColumn("volume", "text", (c) => c.notNull())
      .addColumn("holder", "text")
      .addColumn("created_at_ms", "bigint", (c) => c.notNull())
      .addColumn("last_used_ms", "bigint", (c) => c.notNull())
      .addPrimaryKeyConstraint("browser_profile_pk", ["owner", "name"])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable("browser_profile").execute();
  },
};
