import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";

// A password box's viewer password changes when someone who was given it loses access (ADR 0029):
// the password is derived from the box's agent secret and `epoch`, which the server raises and
// tells the box. No row: epoch 0 (the password every box had before). Who was given the current
// password is kept in direct_ticket (issuer `password:<issuer>`), as the token holders are.
export const directPassword: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("direct_password")
      .addColumn("box_id", "text", (c) => c.primaryKey().references("box.id").onDelete("cascade"))
      .addColumn("epoch", "integer", (c) => c.notNull())
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable("direct_password").execute();
  },
};
