import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

// Prometheus metrics (prom-client), served by server/metrics.ts at GET /metrics. What happens
// (launches, batches, takeovers, sockets, pool claims) is counted here where it happens; what is
// (boxes by state, trace store size, pool size) is read by server/metrics.ts at scrape time.
// Every server of a cluster (docs/decisions/0021) counts its own; store-wide gauges read the
// shared store, so each server reports the same value for them.
//
// HOLM_METRICS=0 turns counting off: the functions below return before touching prom-client
// (the bench's "off"). Read from process.env, once, so a hot path pays one boolean test.

export const METRICS_ON = process.env.HOLM_METRICS !== "0";

/** This server's registry: Node's own metrics (event loop lag, heap, GC) and holm's. */
export const registry = new Registry();
if (METRICS_ON) collectDefaultMetrics({ register: registry });

const registers = [registry];

const startPhase = new Histogram({
  name: "holm_box_start_phase_seconds",
  help: "How long each phase of a box's start took (queued, image, container, x, vnc, browser, agent)",
  labelNames: ["phase"],
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 1200],
  registers,
});

const starts = new Histogram({
  name: "holm_box_start_seconds",
  help: "A box's start from recorded to ready or failed, by outcome",
  labelNames: ["outcome"],
  buckets: [0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300, 1200],
  registers,
});

const launches = new Counter({ name: "holm_box_launches_total", help: "Box launches begun (a claim from the warm pool is no launch)", registers });

const launchFailures = new Counter({
  name: "holm_box_launch_failures_total",
  help: "Box launches that ended failed, by the start phase they failed in",
  labelNames: ["phase"],
  registers,
});

const batches = new Histogram({
  name: "holm_batch_duration_seconds",
  help: "A batch (POST …/screens/{n}/actions) from the route's call to its answer, by step type: the type of its steps when they are all one type, `mixed` otherwise",
  labelNames: ["step"],
  buckets: [0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1, 2.5, 5, 10, 30],
  registers,
});

const steps = new Counter({ name: "holm_batch_steps_total", help: "Steps asked for in batches, by step type", labelNames: ["step"], registers });

const sockets = new Gauge({
  name: "holm_sockets",
  help: "Open WebSockets on this server: viewer (view mode), control (control mode), terminal, cdp",
  labelNames: ["kind"],
  registers,
});

const takeovers = new Counter({ name: "holm_takeovers_total", help: "Screens a person took over (on this server)", registers });

const poolClaims = new Counter({
  name: "holm_pool_claims_total",
  help: "POST /v1/boxes of a spec with a warm pool, by result: hit (a ready pool box was claimed) or miss (a cold launch)",
  labelNames: ["result"],
  registers,
});

export type SocketKind = "viewer" | "control" | "terminal" | "cdp";
// Every kind shows from the first scrape, at 0.
if (METRICS_ON) for (const kind of ["viewer", "control", "terminal", "cdp"]) sockets.set({ kind }, 0);

export function countLaunch(): void {
  if (METRICS_ON) launches.inc();
}

/** A start that ended: each phase's time (from its begin to the next's), the whole, the outcome. */
export function observeStart(phases: { name: string; at_ms: number }[], endedMs: number, failedIn?: string): void {
  if (!METRICS_ON || phases.length === 0) return;
  phases.forEach((p, i) => startPhase.observe({ phase: p.name }, ((phases[i + 1]?.at_ms ?? endedMs) - p.at_ms) / 1000));
  starts.observe({ outcome: failedIn ? "failed" : "ready" }, (endedMs - phases[0]!.at_ms) / 1000);
  if (failedIn) launchFailures.inc({ phase: failedIn });
}

/** The label of a batch: its steps' one type, or `mixed`. */
export function batchLabel(types: readonly string[]): string {
  const first = types[0] ?? "none";
  for (let i = 1; i < types.length; i++) if (types[i] !== first) return "mixed";
  return first;
}

export function observeBatch(types: readonly string[], seconds: number): void {
  if (!METRICS_ON) return;
  batches.observe({ step: batchLabel(types) }, seconds);
  for (const t of types) steps.inc({ step: t });
}

/** A socket opened; the function it returns closes it (once). */
export function countSocket(kind: SocketKind): () => void {
  if (!METRICS_ON) return () => {};
  sockets.inc({ kind });
  let open = true;
  return () => {
    if (open) sockets.dec({ kind });
    open = false;
  };
}

export function countTakeover(): void {
  if (METRICS_ON) takeovers.inc();
}

export function countPoolClaim(hit: boolean): void {
  if (METRICS_ON) poolClaims.inc({ result: hit ? "hit" : "miss" });
}
