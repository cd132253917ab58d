import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";

// Which desktop of a box this is: 1 at launch, one more each time a stopped box resumes (a new
// desktop). Viewer URLs name it, so a URL of an earlier desktop is told apart (seed 002: "new
// desktop, new viewer URL").
export const desktopGeneration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable("box").addColumn("desktop", "integer", (c) => c.notNull().defaultTo(1)).execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable("box").dropColumn("desktop").execute();
  },
};
