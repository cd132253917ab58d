import fs from "node:fs";
import path from "node:path";
import SQLite from "better-sqlite3";
import { Kysely, SqliteDialect } from "kysely";
import { Migrator } from "kysely/migration";
import type { Database } from "../../db/schema";
import { migrationProvider } from "../../db/migrations";
import { env } from "./env.server";

let instance: Kysely<Database> | undefined;
let sqlite: SQLite.Database | undefined;

/** The store. `memory` is SQLite in memory, `local` a file in the state directory: one code path. */
export function db(): Kysely<Database> {
  if (!instance) throw new Error("the store is not open: call openDb() at boot");
  return instance;
}

export async function openDb(): Promise<Kysely<Database>> {
  if (instance) return instance;
  const e = env();
  let file = ":memory:";
  if (e.HOLM_STORAGE_BACKEND === "local") {
    fs.mkdirSync(e.HOLM_STATE_DIR, { recursive: true, mode: 0o700 });
    file = path.join(e.HOLM_STATE_DIR, "holm.db");
  }
  sqlite = new SQLite(file);
  // WAL with synchronous=NORMAL survives a killed process (not a power cut) and keeps writes fast.
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("synchronous = NORMAL");
  sqlite.pragma("busy_timeout = 5000");
  sqlite.pragma("foreign_keys = ON");
  instance = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  // Unordered: migration numbers are handed out to changes developed side by side (0011 and 0012
  // for issue 16), so a store may have run a later one before an earlier one is merged.
  const { error, results } = await new Migrator({ db: instance, provider: migrationProvider, allowUnorderedMigrations: true }).migrateToLatest();
  for (const r of results ?? []) {
    if (r.status === "Error") console.error(`[holm] migration ${r.migrationName} failed`);
  }
  if (error) throw error;
  return instance;
}

export async function closeDb(): Promise<void> {
  await instance?.destroy();
  instance = undefined;
  sqlite = undefined;
}
