import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";

// What several servers must share (docs/decisions/0021), kept in the store so it outlives every
// server: who holds each screen, and what each idempotency key answered.
export const cluster: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("takeover")
      .addColumn("box_id", "text", (c) => c.notNull())
      .addColumn("screen", "integer", (c) => c.notNull())
      .addColumn("owner", "text")
      // `user:<id>`, `key:<id>` or `server`.
      .addColumn("by", "text", (c) => c.notNull())
      .addColumn("exclusive", "integer", (c) => c.notNull())
      .addColumn("since_ms", "bigint", (c) => c.notNull())
      // The takeover ends when this passes with nobody's control connection keeping it: every
      // server with one of the holder's connections moves it on.
      .addColumn("alive_until_ms", "bigint", (c) => c.notNull())
      // When the box's input guard was last raised; one server raises it again every 30 s.
      .addColumn("guard_at_ms", "bigint", (c) => c.notNull())
      .addPrimaryKeyConstraint("takeover_pk", ["box_id", "screen"])
      .execute();
    await db.schema
      .createTable("idempotency")
      // sha256 of scope and key: the key itself is the caller's and may be long.
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("body_hash", "text", (c) => c.notNull())
      .addColumn("at_ms", "bigint", (c) => c.notNull())
      // The server answering it while `outcome` is null.
      .addColumn("server_id", "text", (c) => c.notNull())
      .addColumn("outcome", "text")
      .execute();
    await db.schema.createIndex("idempotency_at").on("idempotency").column("at_ms").execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable("idempotency").execute();
    await db.schema.dropTable("takeover").execute();
  },
};
