import fs from "node:fs";
import { ON_POSTGRES, dropRunDatabases } from "../support/postgres";
import { describeFindings, findSecrets, logDir } from "../support/log-secrets";
import { RUN_LABEL, removeTestBoxes } from "../support/server";

// One label per run; teardown removes whatever a crashed test left behind: box containers, and
// on PostgreSQL (HOLM_TEST_STORE=postgres) the run's test databases.
/** Whether the log directory is the caller's (scripts/test.sh's, which checks and removes it). */
let ownLogDir = false;

export async function setup() {
  ownLogDir = process.env.HOLM_TEST_LOG_DIR === undefined;
  process.env.HOLM_TEST_RUN = RUN_LABEL;
  // Every test server's output goes here, and the secrets the tests used (support/log-secrets.ts).
  process.env.HOLM_TEST_LOG_DIR = logDir();
}

export async function teardown() {
  const n = await removeTestBoxes(RUN_LABEL);
  if (n) console.log(`[tests] removed ${n} leftover box container(s)`);
  if (ON_POSTGRES) {
    const d = await dropRunDatabases(RUN_LABEL);
    if (d) console.log(`[tests] dropped ${d} leftover test database(s)`);
  }
  // Last: no server log of this run holds a secret a test gave a server. (scripts/test.sh checks
  // again once every suite has ended, the end-to-end tests' servers included.)
  const found = findSecrets(logDir());
  if (found.length) {
    console.error(`[tests] secrets in the test servers' logs (${logDir()}):\n${describeFindings(found)}`);
    // A throw here is only printed by vitest ("error during close"); the exit code must say it.
    process.exitCode = 1;
    return;
  }
  // Clean: a directory of our own goes (one with a finding stays, to be read).
  if (ownLogDir) fs.rmSync(logDir(), { recursive: true, force: true });
}
