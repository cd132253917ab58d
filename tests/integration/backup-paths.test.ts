import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleClient } from "../support/console";
import { holmCli } from "../support/holm-cli";
import { ON_POSTGRES } from "../support/postgres";
import { type TestServer, startServer } from "../support/server";
import { openStore } from "../support/store";
import { apiAs } from "../support/workspaces";

// Where `holm backup FILE` may write (README "Backups and restore"). The archive is written
// beside FILE and renamed onto it, so a FILE in the server's state directory replaced a file the
// server runs on: its store (a server restarted on it found a gzip file, not a database) or its
// key. A real server's `local` store and the built CLI; the state directory is also named through
// a symlink, as /var/lib/holm often is.

const work = fs.mkdtempSync(path.join(os.tmpdir(), "holm-backup-paths-"));
const stateDir = path.join(work, "state");
let server: TestServer;
let key: string;

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_STATE_DIR: stateDir });
  const c = consoleClient(server);
  key = (await c.createKey(await c.signUp("ada@example.com", "A"), "agent")).secret;
}, 120_000);

afterAll(async () => {
  await server?.stop();
  fs.rmSync(work, { recursive: true, force: true });
});

describe.skipIf(ON_POSTGRES)("holm backup FILE inside the state directory", () => {
  it("is refused for the store, its key and any name there (also through a symlink); the server starts again on its store with its people", async () => {
    fs.symlinkSync(stateDir, path.join(work, "link"));
    const keyBefore = fs.readFileSync(path.join(stateDir, "secret.key"));
    // The store as a busy server leaves it: its WAL checkpointed into the file (every 1000 pages).
    const live = openStore(server);
    live.pragma("wal_checkpoint(TRUNCATE)");
    live.close();
    for (const file of [path.join(stateDir, "holm.db"), path.join(stateDir, "secret.key"), path.join(stateDir, "frames", "b.tar.gz"), path.join(work, "link", "holm.db")]) {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      const ran = await holmCli(work, ["backup", file, "--state-dir", stateDir]);
      expect(ran.code, `${file}: ${ran.stdout}${ran.stderr}`).toBe(1);
      expect(ran.stderr).toMatch(/inside the state directory .*: name a place outside it/);
    }
    expect(fs.readFileSync(path.join(stateDir, "holm.db")).subarray(0, 16).toString("latin1")).toBe("SQLite format 3\u0000");
    expect(fs.readFileSync(path.join(stateDir, "secret.key"))).toEqual(keyBefore);
    expect(fs.existsSync(path.join(stateDir, "frames", "b.tar.gz"))).toBe(false);
    // Outside it, the same command writes the archive.
    const ok = await holmCli(work, ["backup", path.join(work, "ok.tar.gz"), "--state-dir", stateDir]);
    expect(ok.code, ok.stderr).toBe(0);
    // What the operator sees next: the store still checks whole once its WAL is checkpointed into
    // the file (as SQLite does on its own every 1000 pages), the server restarts on it, and the
    // key still works.
    await server.stop();
    const store = openStore(server);
    try {
      store.pragma("wal_checkpoint(TRUNCATE)");
      expect(store.pragma("quick_check")).toEqual([{ quick_check: "ok" }]);
    } finally {
      store.close();
    }
    server = await server.restart();
    expect((await apiAs(server, key)("/v1/boxes")).status).toBe(200);
  }, 120_000);
});
