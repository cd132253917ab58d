import { RUN_LABEL, removeTestBoxes } from "../support/server";

// One label per run; teardown removes whatever a crashed test left behind.
export async function setup() {
  process.env.HOLM_TEST_RUN = RUN_LABEL;
}

export async function teardown() {
  const n = await removeTestBoxes(RUN_LABEL);
  if (n) console.log(`[tests] removed ${n} leftover box container(s)`);
}
