import { randomBytes } from "node:crypto";
import pg from "pg";

// Test servers on PostgreSQL (HOLM_TEST_STORE=postgres): a fresh database per server (and per
// state directory, so a restart or a second server on the same state finds the same store),
// named after the run so whatever a crashed test left is found and dropped by the teardown.
// `bash scripts/setup.sh` with HOLM_TEST_POSTGRES=1 makes the role and starts the cluster.

/** True when the tests' servers run on PostgreSQL instead of SQLite. */
export const ON_POSTGRES = process.env.HOLM_TEST_STORE === "postgres";

/** A database the role may connect to and create databases from (setup.sh makes it). */
export const ADMIN_URL = process.env.HOLM_TEST_DATABASE_URL ?? "postgres://holm:holm@127.0.0.1:5432/holm";

/** The prefix of every test database of a run (lowercase letters, digits and `_`). */
export function databasePrefix(run: string): string {
  return `holm_test_${run.toLowerCase().replace(/[^a-z0-9]+/g, "_").slice(0, 36)}_`;
}

/** The URL of another database on the same cluster, as the same role. */
export function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.href;
}

async function withAdmin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  try {
    await client.connect();
  } catch (err) {
    throw new Error(
      `PostgreSQL for the tests does not answer at ${ADMIN_URL.replace(/:[^:@/]*@/, ":***@")} (${(err as Error).message}); ` +
        "run `HOLM_TEST_POSTGRES=1 bash scripts/setup.sh`, or set HOLM_TEST_DATABASE_URL",
    );
  }
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const quoted = (name: string) => {
  if (!/^[a-z0-9_]{1,63}$/.test(name)) throw new Error(`not a test database name: ${name}`);
  return `"${name}"`;
};

/** Creates an empty database of the run (C collation: text sorts by bytes, as on SQLite); its name. */
export async function createTestDatabase(run: string): Promise<string> {
  const name = `${databasePrefix(run)}${randomBytes(5).toString("hex")}`;
  await withAdmin((c) => c.query(`create database ${quoted(name)} template template0 encoding 'UTF8' lc_collate 'C' lc_ctype 'C'`));
  return name;
}

/**
 * Drops test databases, ending their sessions first (a server still running loses its store).
 * An autovacuum worker on one needs pg_signal_backend to end (setup.sh grants it); without it, or
 * while one finishes, the drop is tried again for a few seconds.
 */
export async function dropTestDatabases(names: Iterable<string>): Promise<void> {
  const list = [...names];
  if (list.length === 0) return;
  await withAdmin(async (c) => {
    for (const name of list) await dropWithRetry(c, name);
  });
}

async function dropWithRetry(c: pg.Client, name: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await c.query(`drop database if exists ${quoted(name)} with (force)`);
      return;
    } catch (err) {
      if (attempt >= 20) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** Drops every database a run made (the teardown's net for a crashed test); how many. */
export async function dropRunDatabases(run: string): Promise<number> {
  return withAdmin(async (c) => {
    const prefix = databasePrefix(run);
    const { rows } = await c.query<{ datname: string }>("select datname from pg_database where starts_with(datname, $1)", [prefix]);
    for (const { datname } of rows) await dropWithRetry(c, datname);
    return rows.length;
  });
}

/** How many test databases exist (of every run), for a check that none is left. */
export async function countTestDatabases(run?: string): Promise<number> {
  return withAdmin(async (c) => {
    const { rows } = await c.query<{ n: string }>("select count(*) as n from pg_database where starts_with(datname, $1)", [
      run ? databasePrefix(run) : "holm_test_",
    ]);
    return Number(rows[0]!.n);
  });
}
