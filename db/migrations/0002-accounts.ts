import type { Kysely } from "kysely";
import type { Migration } from "kysely/migration";

export const accounts: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("user")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("email", "text", (c) => c.notNull().unique())
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("password_hash", "text", (c) => c.notNull())
      .addColumn("is_admin", "integer", (c) => c.notNull().defaultTo(0))
      .addColumn("created_at_ms", "bigint", (c) => c.notNull())
      .execute();

    await db.schema
      .createTable("session")
      .addColumn("id", "text", (c) => c.primaryKey()) // sha256 of the token: the token is never stored
      .addColumn("user_id", "text", (c) => c.notNull().references("user.id").onDelete("cascade"))
      .addColumn("workspace_id", "text")
      .addColumn("created_at_ms", "bigint", (c) => c.notNull())
      .addColumn("expires_at_ms", "bigint", (c) => c.notNull())
      .execute();
    await db.schema.createIndex("session_user_idx").on("session").column("user_id").execute();

    await db.schema
      .createTable("workspace")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("created_at_ms", "bigint", (c) => c.notNull())
      .execute();

    await db.schema
      .createTable("membership")
      .addColumn("workspace_id", "text", (c) => c.notNull().references("workspace.id").onDelete("cascade"))
      .addColumn("user_id", "text", (c) => c.notNull().references("user.id").onDelete("cascade"))
      .addColumn("role", "text", (c) => c.notNull())
      .addColumn("created_at_ms", "bigint", (c) => c.notNull())
      .addPrimaryKeyConstraint("membership_pk", ["workspace_id", "user_id"])
      .execute();

    await db.schema
      .createTable("invitation")
      .addColumn("id", "text", (c) => c.primaryKey()) // sha256 of the invitation token
      .addColumn("workspace_id", "text", (c) => c.notNull().references("workspace.id").onDelete("cascade"))
      .addColumn("email", "text", (c) => c.notNull())
      .addColumn("role", "text", (c) => c.notNull())
      .addColumn("created_by", "text", (c) => c.notNull())
      .addColumn("created_at_ms", "bigint", (c) => c.notNull())
      .addColumn("expires_at_ms", "bigint", (c) => c.notNull())
      .addColumn("accepted_at_ms", "bigint")
      .execute();

    await db.schema
      .createTable("api_key")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("hash", "text", (c) => c.notNull().unique()) // sha256 of the key: the key is shown once
      .addColumn("prefix", "text", (c) => c.notNull())
      .addColumn("workspace_id", "text", (c) => c.notNull().references("workspace.id").onDelete("cascade"))
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("created_by", "text", (c) => c.notNull())
      .addColumn("created_at_ms", "bigint", (c) => c.notNull())
      .addColumn("expires_at_ms", "bigint")
      .addColumn("last_used_ms", "bigint")
      .addColumn("revoked_at_ms", "bigint")
      .execute();

    await db.schema
      .createTable("setting")
      .addColumn("key", "text", (c) => c.primaryKey())
      .addColumn("value", "text", (c) => c.notNull())
      .execute();
  },
  async down(db: Kysely<any>) {
    for (const t of ["setting", "api_key", "invitation", "membership", "workspace", "session", "user"]) {
      await db.schema.dropTable(t).execute();
    }
  },
};
