import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import SQLite from "better-sqlite3";
import type { TestServer } from "./server";

// A test server's store, from outside (old rows a clock would have made, a check of what is kept
// at rest), whichever engine it runs on: its SQLite file, or its PostgreSQL database
// (HOLM_TEST_STORE=postgres) through psql. Both answer the part of better-sqlite3's API the tests
// use — prepare(sql).run/get/all with `?` parameters, exec, pragma, close — synchronously, so a
// test reads the same on either. The SQL must be valid on both (quote "user").

export interface OuterStatement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): any;
  all(...params: unknown[]): any[];
}

export interface OuterStore {
  kind: "sqlite" | "postgres";
  prepare(sql: string): OuterStatement;
  exec(sql: string): void;
  pragma(p: string): unknown;
  close(): void;
}

/** Opens the server's store: `readonly` only matters to SQLite. */
export function openStore(server: Pick<TestServer, "store" | "stateDir">, opts: { readonly?: boolean } = {}): OuterStore {
  if (server.store.kind === "sqlite") {
    const db = new SQLite(path.join(server.stateDir, "holm.db"), opts);
    if (!opts.readonly) db.pragma("busy_timeout = 5000");
    return Object.assign(db, { kind: "sqlite" as const }) as unknown as OuterStore;
  }
  return postgresStore(server.store.url);
}

/** A value as a PostgreSQL literal. */
function literal(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "number" || typeof v === "bigint") return String(v);
  if (typeof v === "boolean") return v ? "1" : "0";
  if (Buffer.isBuffer(v)) return `'\\x${v.toString("hex")}'::bytea`;
  return `'${String(v).replace(/'/g, "''")}'`;
}

/** `?` placeholders (outside quotes) filled with literals. */
function bind(sql: string, params: unknown[]): string {
  let i = 0;
  let out = "";
  let quote: string | undefined;
  for (const ch of sql) {
    if (quote) {
      if (ch === quote) quote = undefined;
      out += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      out += ch;
    } else if (ch === "?") {
      if (i >= params.length) throw new Error(`too few parameters for: ${sql}`);
      out += literal(params[i++]);
    } else out += ch;
  }
  if (i !== params.length) throw new Error(`${params.length} parameters for ${i} placeholders: ${sql}`);
  return out;
}

function psql(url: string, sql: string): string {
  return execFileSync("psql", [url, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql], { encoding: "utf8" });
}

function postgresStore(url: string): OuterStore {
  const rows = (sql: string, params: unknown[]) =>
    JSON.parse(psql(url, `select coalesce(json_agg(t), '[]') from (${bind(sql.trim().replace(/;$/, ""), params)}) t`)) as any[];
  return {
    kind: "postgres",
    prepare: (sql) => ({
      run: (...params) => {
        // psql prints nothing for a write with -q; count the rows with RETURNING-less CTE.
        const out = psql(url, `with w as (${bind(sql.trim().replace(/;$/, ""), params)} returning 1) select count(*) from w`);
        return { changes: Number(out.trim()) };
      },
      get: (...params) => rows(sql, params)[0],
      all: (...params) => rows(sql, params),
    }),
    exec: (sql) => void psql(url, sql),
    pragma: () => undefined,
    close: () => {},
  };
}

/**
 * Everything the store keeps at rest, as bytes: the SQLite files (holm.db and its WAL), or a
 * dump of the PostgreSQL database — for checks that a secret is never kept in the clear.
 */
export function storeAtRest(server: Pick<TestServer, "store" | "stateDir">): { name: string; bytes: Buffer }[] {
  if (server.store.kind === "sqlite") {
    return fs
      .readdirSync(server.stateDir)
      .filter((f) => f.startsWith("holm.db"))
      .map((f) => ({ name: f, bytes: fs.readFileSync(path.join(server.stateDir, f)) }));
  }
  return [{ name: "pg_dump", bytes: execFileSync("pg_dump", ["--data-only", server.store.url], { maxBuffer: 1 << 30 }) }];
}
