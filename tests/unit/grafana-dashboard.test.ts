import fs from "node:fs";
import path from "node:path";
import { expect, it } from "vitest";
import { registry } from "~/utils/metrics.server";
// Registers the gauges read at scrape time (boxes, trace store, pool, takeovers held).
import "../../server/metrics";

// docs/grafana-dashboard.json asks only for metrics a holm server serves: a renamed metric would
// leave an empty panel nobody notices.

const dashboard = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, "../../docs/grafana-dashboard.json"), "utf8")) as {
  panels: { title: string; targets: { expr: string }[] }[];
};

it("names only metrics the server serves", () => {
  const served = new Set(registry.getMetricsAsArray().map((m) => m.name));
  const asked = new Set<string>();
  for (const p of dashboard.panels) {
    expect(p.targets.length, p.title).toBeGreaterThan(0);
    for (const t of p.targets) for (const m of t.expr.matchAll(/\b((?:holm|nodejs|process)_[a-z0-9_]+)/g)) asked.add(m[1]!);
  }
  const missing = [...asked].map((n) => n.replace(/_(bucket|count|sum)$/, "")).filter((n) => !served.has(n));
  expect(missing).toEqual([]);
  // Every holm metric has a panel.
  const unused = [...served].filter((n) => n.startsWith("holm_") && ![...asked].some((a) => a.startsWith(n)));
  expect(unused).toEqual([]);
});
