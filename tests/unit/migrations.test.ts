import fs from "node:fs";
import path from "node:path";
import SQLite from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { migrationProvider } from "../../db/migrations";

// Migrations are forward-only and append-only: a store that ran a migration must find it again
// under the same name in every later release, or Kysely's migrator stops the server ("corrupted
// migrations"). A new migration goes at the end of db/migrations/index.ts and of RELEASED below;
// none is renamed, reordered or removed. (0011 was never merged: numbers are handed out to
// changes developed side by side, docs/decisions/0020.)

const RELEASED = [
  "0001-boxes",
  "0002-accounts",
  "0003-trace",
  "0004-image-builds",
  "0005-desktop-generation",
  "0006-secrets-states",
  "0007-console",
  "0008-pool",
  "0009-runtimes",
  "0010-webhooks",
  "0012-webhook-secret-rotation",
  "0013-trace-frame-png",
  "0014-trace-append",
  "0015-cluster",
  "0016-profiles",
  "0017-recordings",
  "0018-takeover-recording",
  "0019-direct-tickets",
  "0020-server-ownership",
  "0021-recording-parts",
  "0022-profile-size",
  "0023-box-typed-secrets",
  "0024-direct-password",
  "0025-browser-restarts",
];

describe("the migration list", () => {
  it("keeps every released migration, in order, and only appends", async () => {
    const names = Object.keys(await migrationProvider.getMigrations());
    expect(names.slice(0, RELEASED.length)).toEqual(RELEASED);
    const added = names.slice(RELEASED.length);
    expect(added, "a new migration: add its name to RELEASED in this test too").toEqual([]);
  });

  it("names each NNNN-words, numbers rising, each with up()", async () => {
    const all = await migrationProvider.getMigrations();
    const names = Object.keys(all);
    for (const n of names) expect(n).toMatch(/^\d{4}-[a-z0-9]+(-[a-z0-9]+)*$/);
    const numbers = names.map((n) => Number(n.slice(0, 4)));
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    expect(new Set(numbers).size).toBe(numbers.length);
    for (const n of names) expect(typeof all[n]!.up, n).toBe("function");
  });

  it("has every migration the previous release's store ran (tests/fixtures/upgrade)", async () => {
    const store = new SQLite(":memory:");
    store.exec(fs.readFileSync(path.resolve(import.meta.dirname, "../fixtures/upgrade/store.sql"), "utf8"));
    const ran = store.prepare("select name from kysely_migration").pluck().all() as string[];
    store.close();
    const names = Object.keys(await migrationProvider.getMigrations());
    expect(ran.filter((m) => !names.includes(m))).toEqual([]);
  });
});
