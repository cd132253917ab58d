import fs from "node:fs";
import path from "node:path";
import SQLite from "better-sqlite3";
import {
  Kysely,
  type KyselyPlugin,
  OperationNodeTransformer,
  PostgresDialect,
  type PrimitiveValueListNode,
  SqliteDialect,
  type Transaction,
  type ValueNode,
  sql,
} from "kysely";
import pg from "pg";
import { Migrator } from "kysely/migration";
import type { Database } from "../../db/schema";
import { migrationProvider } from "../../db/migrations";
import { env } from "./env.server";
import { log } from "./log.server";
import { assertRestoreFinished } from "./restore-marker.server";

let instance: Kysely<Database> | undefined;
let sqlite: SQLite.Database | undefined;
let kind: StoreKind = "sqlite";

export type StoreKind = "sqlite" | "postgres";

/**
 * The store. `memory` is SQLite in memory, `local` a file in the state directory, `postgres` the
 * database HOLM_DATABASE_URL names (docs/decisions/0020): one code path, the same migrations.
 */
export function db(): Kysely<Database> {
  if (!instance) throw new Error("the store is not open: call openDb() at boot");
  return instance;
}

/** Which engine the open store runs on (SQLite for `memory` and `local`). */
export function storeKind(): StoreKind {
  return kind;
}

/**
 * Serialises transactions that name the same key until they end (a per-workspace limit's check
 * and insert, the webhook cursor). On PostgreSQL a transaction-scoped advisory lock: the pool's
 * transactions run side by side, in this process and in other servers. On SQLite nothing to do:
 * its one connection runs one transaction at a time already.
 */
export async function lockKey(tx: Transaction<Database>, key: string): Promise<void> {
  if (kind !== "postgres") return;
  await sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`.execute(tx);
}

export async function openDb(): Promise<Kysely<Database>> {
  if (instance) return instance;
  const e = env();
  if (e.HOLM_STORAGE_BACKEND === "postgres") {
    instance = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: postgresPool(e.HOLM_DATABASE_URL!, e.HOLM_DATABASE_POOL) }),
      plugins: [noNulText],
    });
    kind = "postgres";
    // Several servers may boot at once: Kysely's migrator holds an advisory lock on PostgreSQL.
    await migrate(instance);
    return instance;
  }
  kind = "sqlite";
  let file = ":memory:";
  if (e.HOLM_STORAGE_BACKEND === "local") {
    // Not a fresh empty store in place of one a cut-off restore moved aside.
    assertRestoreFinished(e.HOLM_STATE_DIR);
    fs.mkdirSync(e.HOLM_STATE_DIR, { recursive: true, mode: 0o700 });
    file = path.join(e.HOLM_STATE_DIR, "holm.db");
    ownerOnly(file);
  }
  sqlite = new SQLite(file);
  // WAL with synchronous=NORMAL survives a killed process (not a power cut) and keeps writes fast.
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("synchronous = NORMAL");
  sqlite.pragma("busy_timeout = 5000");
  sqlite.pragma("foreign_keys = ON");
  instance = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
  await migrate(instance);
  return instance;
}

/**
 * The store readable by this user only, whatever the umask and the mode of a state directory that
 * already existed (one `mkdir` made, or Docker's bind mount: 0755): SQLite makes its file with the
 * umask, and its -wal and -shm with the store's mode, so every user of the machine could read the
 * password hashes, webhook URLs and traces. Made 0600 before SQLite opens it (an empty file is an
 * empty database to SQLite); one an earlier version left open to others is closed to them.
 */
function ownerOnly(file: string): void {
  try {
    fs.closeSync(fs.openSync(file, "wx", 0o600));
  } catch (err) {
    // There already, or not ours to make: SQLite's open says what is wrong, as before.
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") log.warn(`could not make ${file} readable by its owner only: ${(err as Error).message}`);
  }
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) {
    try {
      const { mode } = fs.statSync(f);
      if (mode & 0o077) fs.chmodSync(f, mode & 0o700);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") log.warn(`could not make ${f} readable by its owner only: ${(err as Error).message}`);
    }
  }
}

async function migrate(store: Kysely<Database>): Promise<void> {
  // Unordered: migration numbers are handed out to changes developed side by side (0011 and 0012
  // for issue 16), so a store may have run a later one before an earlier one is merged.
  const { error, results } = await new Migrator({ db: store, provider: migrationProvider, allowUnorderedMigrations: true }).migrateToLatest();
  for (const r of results ?? []) {
    if (r.status === "Error") log.error(`migration ${r.migrationName} failed`);
  }
  if (error) {
    // A store a newer holm migrated: kysely's "corrupted migrations" would read as damage, and
    // the store is fine; this holm is older than it (README: Upgrades, migrations are forward-only).
    const newer = /previously executed migration (\S+) is missing/.exec(error instanceof Error ? error.message : String(error));
    if (newer) throw new Error(`this store was made by a newer holm (migration ${newer[1]}): run that release or newer on it, or restore a backup taken before it`);
    throw error;
  }
}

/**
 * PostgreSQL's text may not hold U+0000 (SQLite's may): a reason or log line that carries one
 * (a container's output) would make its whole write fail. Every string parameter has its NULs
 * replaced with U+FFFD on the way in. JSON columns are unaffected: JSON.stringify escapes NUL.
 */
class NulInText extends OperationNodeTransformer {
  protected override transformValue(node: ValueNode): ValueNode {
    return hasNul(node.value) ? { ...node, value: withoutNul(node.value) } : node;
  }

  protected override transformPrimitiveValueList(node: PrimitiveValueListNode): PrimitiveValueListNode {
    return node.values.some(hasNul) ? { ...node, values: node.values.map(withoutNul) } : node;
  }
}

const hasNul = (v: unknown): boolean => typeof v === "string" && v.includes("\0");

/** A value as PostgreSQL's text takes it: a string's NULs become U+FFFD; anything else as it is. */
export function withoutNul(v: unknown): unknown {
  return typeof v === "string" ? v.replaceAll("\0", "\uFFFD") : v;
}

const nulInText = new NulInText();
const noNulText: KyselyPlugin = {
  transformQuery: (args) => nulInText.transformNode(args.node),
  transformResult: async (args) => args.result,
};

/** PostgreSQL's OIDs of the types whose text form pg hands over as a string by default. */
const INT8_OID = 20;
const NUMERIC_OID = 1700;

/**
 * A pool whose bigint (int8: the ms timestamps, count(*)) and numeric values come back as JS
 * numbers, as SQLite gives them, instead of pg's strings: a ms timestamp is far below 2^53. The
 * parsers are this pool's own, not pg's global ones.
 */
export function postgresPool(connectionString: string, max = 10): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    max,
    types: {
      getTypeParser: ((oid: number, format?: "text" | "binary") => {
        if (oid === INT8_OID || oid === NUMERIC_OID) return (v: string) => (v === null ? null : Number(v));
        return pg.types.getTypeParser(oid, format as "text");
      }) as typeof pg.types.getTypeParser,
    },
  });
  // An idle connection the server drops (a restart of PostgreSQL) must not end this process; the
  // next query opens a new one.
  pool.on("error", (err) => log.error(`PostgreSQL connection lost: ${err.message}`));
  // The pool listens only while a connection is idle: one that dies while checked out between two
  // queries (a transaction's) emits 'error' on its client, which ended the process (CI run 73).
  // Its transaction fails with the next query; the pool drops the connection on its release.
  pool.on("connect", (client) => {
    client.on("error", (err) => log.error(`PostgreSQL connection lost while in use: ${err.message}`));
  });
  return pool;
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
  kind = "sqlite";
}
