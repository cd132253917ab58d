import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";

// A screen's browser that quit and was started again by the box's entrypoint is written into the
// trace and the event log from the box's own log (app/models/browser-restarts.server.ts). The
// server keeps how far it has read that log per box (the time of the last line it wrote), so that
// no line is written twice: not by two server processes reading it at once (the row is claimed by
// one conditional write), nor by a server that restarted and reads the same log again.
export const browserRestarts: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("browser_restart_seen")
      .addColumn("box_id", "text", (c) => c.primaryKey().references("box.id").onDelete("cascade"))
      .addColumn("through_ms", "bigint", (c) => c.notNull())
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable("browser_restart_seen").execute();
  },
};
