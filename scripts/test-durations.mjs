#!/usr/bin/env node
// Writes tests/integration/durations.json, what each integration file took, from the output of
// earlier runs (`npm test`'s or CI's logs, given as arguments): the shards are cut by it
// (tests/support/duration-sequencer.ts). Each file's seconds are the mean over the logs naming it.
//   node scripts/test-durations.mjs ci-run-1.log ci-run-2.log
import { readFileSync, writeFileSync } from "node:fs";

const logs = process.argv.slice(2);
if (logs.length === 0) {
  console.error("usage: node scripts/test-durations.mjs LOG...");
  process.exit(2);
}
const seen = new Map();
for (const log of logs) {
  // vitest's line for a file: " ✓  integration  tests/integration/x.test.ts (12 tests) 34567ms"
  const text = readFileSync(log, "utf8").replace(/\x1b\[[0-9;]*m/g, "");
  for (const m of text.matchAll(/^ [✓❯×]  integration  (tests\/integration\/\S+\.test\.ts) \(.*\) (\d+)ms$/gm)) {
    seen.set(m[1], [...(seen.get(m[1]) ?? []), Number(m[2]) / 1000]);
  }
}
const out = Object.fromEntries(
  [...seen].sort(([a], [b]) => (a < b ? -1 : 1)).map(([file, s]) => [file, Math.round((s.reduce((x, y) => x + y, 0) / s.length) * 10) / 10]),
);
writeFileSync(new URL("../tests/integration/durations.json", import.meta.url), JSON.stringify(out, null, 2) + "\n");
console.log(`${Object.keys(out).length} files, ${Math.round(Object.values(out).reduce((x, y) => x + y, 0))} s in all`);
