import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";
import { bytesType } from "../dialect";

// A frame's PNG in the store itself, for HOLM_STORAGE_BACKEND=postgres (docs/decisions/0020):
// several servers share the database, not a directory. SQLite (`local`) keeps its frames as
// files under the state directory and leaves the column null. (0011 is another change's number.)
export const traceFramePng: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable("trace_frame").addColumn("png", bytesType(db)).execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable("trace_frame").dropColumn("png").execute();
  },
};
