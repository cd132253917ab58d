import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";

// The warm pool (issue 15, ADR 0014): a box launched ahead of any request, unowned and
// invisible until a POST /v1/boxes claims it. 1 while it waits in the pool, 0 once claimed.
export const pool: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable("box").addColumn("pooled", "integer", (c) => c.notNull().defaultTo(0)).execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable("box").dropColumn("pooled").execute();
  },
};
