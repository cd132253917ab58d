import type { Migration, MigrationProvider } from "kysely/migration";
import { boxes } from "./0001-boxes";

// Listed here, not read from disk, so the migrations travel inside the server bundle.
const migrations: Record<string, Migration> = {
  "0001-boxes": boxes,
};

export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    return migrations;
  },
};
