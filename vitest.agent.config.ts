// The in-box agent's tests: real Xvfb displays on the host, one file at a time (each file owns
// its display numbers and the machine has two cores, so timings stay honest).
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["tests/agent/**/*.test.ts"],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
