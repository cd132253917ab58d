import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, vi } from "vitest";
import { createTestDatabase, databaseUrl, dropTestDatabases } from "./postgres";

// A fresh module graph per store: the env module caches on first use, so HOLM_STORAGE_BACKEND and
// HOLM_STATE_DIR are set before the import (vi.resetModules). Restores both and removes every
// state directory after the file's tests. `postgres` opens a fresh database of the tests'
// PostgreSQL (tests/support/postgres.ts) per call, dropped after the file's tests.

type DbModule = typeof import("~/utils/db.server");

export function storeModules(prefix: string) {
  const saved = { backend: process.env.HOLM_STORAGE_BACKEND, dir: process.env.HOLM_STATE_DIR, url: process.env.HOLM_DATABASE_URL };
  const dirs: string[] = [];
  const databases: string[] = [];
  let open: DbModule | undefined;

  const tempDir = (): string => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `holm-${prefix}-`));
    dirs.push(dir);
    return dir;
  };

  afterAll(async () => {
    await open?.closeDb();
    if (saved.backend === undefined) delete process.env.HOLM_STORAGE_BACKEND;
    else process.env.HOLM_STORAGE_BACKEND = saved.backend;
    if (saved.dir === undefined) delete process.env.HOLM_STATE_DIR;
    else process.env.HOLM_STATE_DIR = saved.dir;
    if (saved.url === undefined) delete process.env.HOLM_DATABASE_URL;
    else process.env.HOLM_DATABASE_URL = saved.url;
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
    await dropTestDatabases(databases);
    // A file opens a database per test: dropping ten of them took over the default 10 s once
    // beside the rest of the unit suite on a loaded machine.
  }, 60_000);

  /** Opens the store `backend` in `stateDir` (a new one by default) with fresh modules. */
  const openStore = async (backend: "memory" | "local" | "postgres", stateDir = tempDir()) => {
    await open?.closeDb();
    vi.resetModules();
    process.env.HOLM_STORAGE_BACKEND = backend;
    process.env.HOLM_STATE_DIR = stateDir;
    if (backend === "postgres") {
      const name = await createTestDatabase(`unit-${prefix}-${process.pid}`);
      databases.push(name);
      process.env.HOLM_DATABASE_URL = databaseUrl(name);
    }
    const dbm: DbModule = await import("~/utils/db.server");
    await dbm.openDb();
    open = dbm;
    return { dbm, stateDir };
  };

  return { tempDir, openStore };
}
