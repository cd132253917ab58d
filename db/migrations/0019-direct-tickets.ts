import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";

// Who holds direct viewer tickets for a box (policy.auth token, ADR 0029): one row per box and
// issuer, with the latest expiry signed. A box frozen (paused) or stopped when access changed did
// not hear of it, and a stopped box's agent forgets what it was told; on resume the server checks
// each issuer here again and has the box refuse the tickets of those whose access is gone.
export const directTickets: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("direct_ticket")
      .addColumn("box_id", "text", (c) => c.notNull())
      .addColumn("issuer", "text", (c) => c.notNull())
      .addColumn("expires_at_ms", "bigint", (c) => c.notNull())
      .addPrimaryKeyConstraint("direct_ticket_pk", ["box_id", "issuer"])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable("direct_ticket").execute();
  },
};
