import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";

// Which server is working on what (docs/decisions/0021), so servers sharing one store leave each
// other's work alone: the server process that is starting a box or keeps it in its warm pool, and
// the server sending a webhook delivery now (a claim that lapses, so a dead sender's is retried).
export const serverOwnership: Migration = {
  async up(db: Kysely<any>) {
    // SERVER_ID of the process (app/utils/cluster.server.ts); null on rows from before this.
    await db.schema.alterTable("box").addColumn("server_id", "text").execute();
    await db.schema.alterTable("webhook_delivery").addColumn("claimed_by", "text").execute();
    await db.schema.alterTable("webhook_delivery").addColumn("claimed_until_ms", "bigint").execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable("webhook_delivery").dropColumn("claimed_until_ms").execute();
    await db.schema.alterTable("webhook_delivery").dropColumn("claimed_by").execute();
    await db.schema.alterTable("box").dropColumn("server_id").execute();
  },
};
