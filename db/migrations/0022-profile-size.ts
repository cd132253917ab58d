import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";

// A browser profile's size (ADR 0025): bytes of its volume, measured when a box lets it go (its
// stop or removal), so GET /v1/profiles shows it and a launch refuses one over
// HOLM_PROFILE_MAX_BYTES. Null until first measured (profiles from before this).
export const profileSize: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable("browser_profile").addColumn("size_bytes", "bigint").execute();
    await db.schema.alterTable("browser_profile").addColumn("measured_at_ms", "bigint").execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable("browser_profile").dropColumn("measured_at_ms").execute();
    await db.schema.alterTable("browser_profile").dropColumn("size_bytes").execute();
  },
};
