import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleClient } from "../support/console";
import { ON_POSTGRES } from "../support/postgres";
import { type TestServer, startServer } from "../support/server";

// Who else on the machine can read a `local` store. The hardened unit (docs/holm.service) runs
// with UMask=0077 in a 0700 StateDirectory, but a server started otherwise (`npm start`, a
// container with a bind-mounted directory, which Docker makes 0755) in a directory that already
// exists keeps that directory's mode, and SQLite makes its files with the process's umask: the
// store (password hashes, webhook URLs, the event log, trace entries) then was readable by every
// user. A real server; another user is `nobody` (setpriv), reading as it would.

const work = fs.mkdtempSync(path.join(os.tmpdir(), "holm-state-modes-"));
const stateDir = path.join(work, "state");
let server: TestServer;

/** Whether `nobody` can read `file` (exit 0 of a cat as that user). */
const nobodyReads = (file: string) => spawnSync("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "cat", file], { stdio: "ignore" }).status === 0;

beforeAll(() => {
  // As `mkdir` or Docker's bind mount leave them: traversable by everyone.
  fs.chmodSync(work, 0o755);
  fs.mkdirSync(stateDir, { mode: 0o755 });
  fs.chmodSync(stateDir, 0o755);
});

afterAll(async () => {
  await server?.stop();
  fs.rmSync(work, { recursive: true, force: true });
});

describe.skipIf(ON_POSTGRES)("a local store's files in a state directory others can enter", () => {
  it("are readable by no other user, also a store an earlier version made 0644", async () => {
    // The server's umask is the runner's: 022 here, as for most shells and services.
    server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_STATE_DIR: stateDir });
    await consoleClient(server).signUp("ada@example.com", "A");
    const files = ["holm.db", "holm.db-wal", "holm.db-shm", "secret.key"].map((n) => path.join(stateDir, n));
    for (const f of files) {
      expect(fs.existsSync(f), f).toBe(true);
      expect(nobodyReads(f), `another user reads ${f} (mode ${(fs.statSync(f).mode & 0o777).toString(8)})`).toBe(false);
    }
    // A store made readable by an earlier version: the next start closes it.
    await server.stop();
    for (const f of files.slice(0, 3)) if (fs.existsSync(f)) fs.chmodSync(f, 0o644);
    server = await server.restart();
    for (const f of files) {
      if (fs.existsSync(f)) expect(nobodyReads(f), `another user reads ${f} after a restart (mode ${(fs.statSync(f).mode & 0o777).toString(8)})`).toBe(false);
    }
  }, 120_000);
});
