import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";

// Webhooks (issue 16, docs/decisions/0018): a workspace's targets, and one row per delivery of
// an event to a target, so a pending retry outlives a restart. A target's secret is kept only
// sealed (app/utils/seal.server.ts). `owner` is a workspace id, or "server" for the server
// token's own, as for secrets.
export const webhooks: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("webhook")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("owner", "text", (c) => c.notNull())
      .addColumn("url", "text", (c) => c.notNull())
      .addColumn("kinds_json", "text", (c) => c.notNull())
      .addColumn("sealed_secret", "text", (c) => c.notNull())
      .addColumn("enabled", "integer", (c) => c.notNull().defaultTo(1))
      .addColumn("created_by", "text", (c) => c.notNull())
      .addColumn("created_at_ms", "bigint", (c) => c.notNull())
      .addColumn("updated_at_ms", "bigint", (c) => c.notNull())
      .execute();
    await db.schema.createIndex("webhook_owner").on("webhook").column("owner").execute();
    await db.schema
      .createTable("webhook_delivery")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("webhook_id", "text", (c) => c.notNull())
      .addColumn("event_seq", "integer", (c) => c.notNull())
      .addColumn("kind", "text", (c) => c.notNull())
      // The exact bytes sent (and signed) on every attempt, so a retry is the same message.
      .addColumn("body", "text", (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
      .addColumn("created_at_ms", "bigint", (c) => c.notNull())
      .addColumn("next_at_ms", "bigint")
      .addColumn("last_at_ms", "bigint")
      .addColumn("last_status", "integer")
      .addColumn("latency_ms", "integer")
      .addColumn("error", "text")
      .addColumn("replay_of", "text")
      .execute();
    await db.schema.createIndex("webhook_delivery_hook").on("webhook_delivery").columns(["webhook_id", "created_at_ms"]).execute();
    await db.schema.createIndex("webhook_delivery_due").on("webhook_delivery").columns(["status", "next_at_ms"]).execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable("webhook_delivery").execute();
    await db.schema.dropTable("webhook").execute();
  },
};
