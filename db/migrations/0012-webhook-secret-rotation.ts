import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";

// Webhook secret rotation (issue 16, docs/decisions/0018): after a rotation the previous secret
// still signs deliveries until `previous_until_ms`, beside the new one, so a receiver can switch
// without refusing a delivery. Sealed like the current secret. (0011 is another change's number.)
export const webhookSecretRotation: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable("webhook").addColumn("sealed_previous_secret", "text").execute();
    await db.schema.alterTable("webhook").addColumn("previous_until_ms", "bigint").execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable("webhook").dropColumn("previous_until_ms").execute();
    await db.schema.alterTable("webhook").dropColumn("sealed_previous_secret").execute();
  },
};
