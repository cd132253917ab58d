import { ON_POSTGRES, dropRunDatabases } from "../support/postgres";
import { RUN_LABEL, removeTestBoxes } from "../support/server";

// One label per run; teardown removes whatever a crashed test left behind: box containers, and
// on PostgreSQL (HOLM_TEST_STORE=postgres) the run's test databases.
export async function setup() {
  process.env.HOLM_TEST_RUN = RUN_LABEL;
}

export async function teardown() {
  const n = await removeTestBoxes(RUN_LABEL);
  if (n) console.log(`[tests] removed ${n} leftover box container(s)`);
  if (ON_POSTGRES) {
    const d = await dropRunDatabases(RUN_LABEL);
    if (d) console.log(`[tests] dropped ${d} leftover test database(s)`);
  }
}
