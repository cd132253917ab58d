import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

// Cuts `--shard=i/n` by how long each file took (tests/integration/durations.json, written by
// scripts/test-durations.mjs from earlier runs' logs), not by count: vitest's own cut (files
// ordered by a hash of their path, then equal counts) put 1,530 s in one half and 1,466 in the
// other, and with three shards could put the swarm, remote-engine and box-exit files (375 s
// together) in one. Longest first, each to the shard with the least so far; a file not in the
// list counts as the median file. The same list and the same files give every shard the same cut,
// so the shards cover each file exactly once.
const durations: Record<string, number> = JSON.parse(readFileSync(new URL("../integration/durations.json", import.meta.url), "utf8"));

export default class DurationSequencer extends BaseSequencer {
  override async shard(files: TestSpecification[]): Promise<TestSpecification[]> {
    const { index, count } = this.ctx.config.shard ?? { index: 1, count: 1 };
    const known = Object.values(durations).sort((a, b) => a - b);
    const median = known.length > 0 ? known[Math.floor(known.length / 2)] : 1;
    const root = this.ctx.config.root;
    const weighed = files
      .map((spec) => {
        const name = relative(root, spec.moduleId).split("\\").join("/");
        return { spec, name, seconds: durations[name] ?? median };
      })
      .sort((a, b) => b.seconds - a.seconds || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const totals = new Array<number>(count).fill(0);
    const mine: TestSpecification[] = [];
    for (const file of weighed) {
      const least = totals.indexOf(Math.min(...totals));
      totals[least] += file.seconds;
      if (least === index - 1) mine.push(file.spec);
    }
    return mine;
  }
}
