import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";

// The console's box list and box page (issue 14): a name and labels a person or an agent gives
// a box (not part of its spec: two boxes that differ only in name are the same desktop), who
// created it (the issuer and the name it had then, so a deleted key still reads as its name),
// the phases and last log lines of its start (kept for a failed box, whose container is gone),
// and when each person was last seen in the console.
export const consoleColumns: Migration = {
  async up(db: Kysely<any>) {
    for (const [name, type] of [
      ["name", "text"],
      ["labels_json", "text"],
      ["created_by", "text"],
      ["created_by_name", "text"],
      ["start_json", "text"],
    ] as const) {
      await db.schema.alterTable("box").addColumn(name, type).execute();
    }
    await db.schema.alterTable("user").addColumn("last_seen_ms", "bigint").execute();
  },
  async down(db: Kysely<any>) {
    for (const name of ["name", "labels_json", "created_by", "created_by_name", "start_json"]) {
      await db.schema.alterTable("box").dropColumn(name).execute();
    }
    await db.schema.alterTable("user").dropColumn("last_seen_ms").execute();
  },
};
