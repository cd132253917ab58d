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
  instance = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
  // Unordered: migration numbers are handed out to changes developed side by side (0011 and 0012
  // for issue 16), so a store may have run a later one before an earlier one is merged.
  const { error, results } = await new Migrator({ db: instance, provider: migrationProvider, allowUnorderedMigrations: true }).migrateToLatest();
  for (const r of results ?? []) {
    if (r.status === "Error") console.error(`[holm] migration ${r.migrationName} failed`);
  }
  if (error) throw error;
  return instance;
}

/** Prepared statements kept, by SQL text: the hot routes run the same few dozen queries. */
const STATEMENT_CACHE = 500;

/**
 * The database as Kysely's SQLite driver sees it, with each statement prepared once: the driver
 * prepares every query it runs, and preparing was about half of the store's time on a one-click
 * batch (a CPU profile of the server: ~0.4 ms of ~0.9 ms). A statement still running (a streamed
 * read) is not handed out twice; a new one is prepared for the second caller. SQLite re-prepares
 * a kept statement itself after a schema change (migrations).
 */
function withStatementCache(database: SQLite.Database): SQLite.Database {
  const cache = new Map<string, SQLite.Statement>();
  const prepare = (sql: string): SQLite.Statement => {
    const kept = cache.get(sql);
    if (kept && !kept.busy) return kept;
    const stmt = database.prepare(sql);
    if (!kept) {
      if (cache.size >= STATEMENT_CACHE) cache.delete(cache.keys().next().value as string);
      cache.set(sql, stmt);
    }
    return stmt;
  };
  return new Proxy(database, {
    get: (target, prop) => {
      if (prop === "prepare") return prepare;
      const value: unknown = Reflect.get(target, prop, target);
      // The native methods need the real database as `this`, not the proxy.
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

export async function closeDb(): Promise<void> {
  await instance?.destroy();
  instance = undefined;
  sqlite = undefined;
}
