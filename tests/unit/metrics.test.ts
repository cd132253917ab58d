import { describe, expect, it } from "vitest";
import { batchLabel, countPoolClaim, countSocket, observeBatch, observeStart, registry } from "~/utils/metrics.server";

// The Prometheus text GET /metrics serves (prom-client's format), for the metrics holm counts
// where things happen. The scrape-time gauges (boxes by state, trace size) are read from a real
// server in tests/integration/metrics.test.ts.

/** The value of one sample line (`name{labels} value`), or undefined. */
async function sample(line: string): Promise<number | undefined> {
  const text = await registry.metrics();
  const found = text.split("\n").find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

describe("metrics", () => {
  it("serves Prometheus text with Node's own metrics, event loop lag among them", async () => {
    expect(registry.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await registry.metrics();
    expect(text).toMatch(/^# HELP nodejs_eventloop_lag_seconds /m);
    expect(text).toMatch(/^# TYPE holm_batch_duration_seconds histogram$/m);
  });

  it("times batches by step type: one type, or mixed", async () => {
    expect(batchLabel(["click"])).toBe("click");
    expect(batchLabel(["click", "click"])).toBe("click");
    expect(batchLabel(["click", "type"])).toBe("mixed");
    const before = (await sample('holm_batch_duration_seconds_count{step="click"}')) ?? 0;
    observeBatch(["click"], 0.005);
    observeBatch(["click", "click"], 0.3);
    observeBatch(["click", "key"], 0.01);
    expect(await sample('holm_batch_duration_seconds_count{step="click"}')).toBe(before + 2);
    expect(await sample('holm_batch_duration_seconds_bucket{le="0.008",step="click"}')).toBeGreaterThanOrEqual(1);
    expect(await sample('holm_batch_duration_seconds_count{step="mixed"}')).toBeGreaterThanOrEqual(1);
    expect(await sample('holm_batch_steps_total{step="click"}')).toBeGreaterThanOrEqual(4);
  });

  it("times each start phase and counts a failure by the phase it failed in", async () => {
    const t = 1_000_000;
    const phases = [
      { name: "queued", at_ms: t },
      { name: "image", at_ms: t + 100 },
      { name: "container", at_ms: t + 200 },
      { name: "x", at_ms: t + 700 },
    ];
    observeStart(phases, t + 1700, "x");
    expect(await sample('holm_box_start_phase_seconds_sum{phase="x"}')).toBeCloseTo(1, 3);
    expect(await sample('holm_box_start_phase_seconds_sum{phase="container"}')).toBeCloseTo(0.5, 3);
    expect(await sample('holm_box_launch_failures_total{phase="x"}')).toBe(1);
    expect(await sample('holm_box_start_seconds_count{outcome="failed"}')).toBe(1);
  });

  it("counts open sockets by kind, each closed once", async () => {
    const close = countSocket("control");
    expect(await sample('holm_sockets{kind="control"}')).toBe(1);
    close();
    close();
    expect(await sample('holm_sockets{kind="control"}')).toBe(0);
    expect(await sample('holm_sockets{kind="viewer"}')).toBe(0);
  });

  it("counts pool hits and misses", async () => {
    countPoolClaim(true);
    countPoolClaim(false);
    countPoolClaim(true);
    expect(await sample('holm_pool_claims_total{result="hit"}')).toBe(2);
    expect(await sample('holm_pool_claims_total{result="miss"}')).toBe(1);
  });
});
