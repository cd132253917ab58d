import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";

// Recording whenever a person holds the screen (issue 18): a per-box setting (`record_takeovers`,
// PATCH /v1/boxes/{id} and the box page) and, on each takeover, the path of the recording it
// started, so whichever server ends the takeover stops that recording and no other.
export const takeoverRecording: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable("box").addColumn("record_takeovers", "integer", (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable("takeover").addColumn("recording", "text").execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable("box").dropColumn("record_takeovers").execute();
    await db.schema.alterTable("takeover").dropColumn("recording").execute();
  },
};
