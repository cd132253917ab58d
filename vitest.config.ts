import { defineConfig } from "vitest/config";
import { fileURLToPath } from "node:url";
import DurationSequencer from "./tests/support/duration-sequencer";

const alias = { "~": fileURLToPath(new URL("./app", import.meta.url)) };

export default defineConfig({
  test: {
    // `--shard` by each file's past duration, not by count (scripts/test.sh runs three shards).
    sequence: { sequencer: DurationSequencer },
    projects: [
      { resolve: { alias }, test: { name: "unit", include: ["tests/unit/**/*.test.ts"] } },
      {
        resolve: { alias },
        test: {
          name: "integration",
          include: ["tests/integration/**/*.test.ts"],
          testTimeout: 180_000,
          hookTimeout: 600_000,
          fileParallelism: false,
          globalSetup: ["tests/integration/global-setup.ts"],
        },
      },
    ],
  },
});
