import type { IncomingMessage, ServerResponse } from "node:http";
import { Gauge } from "prom-client";
import { boxesByState, poolSizes, takeoversHeld, traceStoreSize } from "~/models/stats.server";
import { ApiError } from "~/utils/api-error.server";
import { env } from "~/utils/env.server";
import { log } from "~/utils/log.server";
import { METRICS_ON, registry } from "~/utils/metrics.server";
import { safeEqual } from "~/utils/secret.server";

// GET /metrics: Prometheus text (prom-client), for this server. With several servers (ADR 0021)
// each is scraped on its own: counters, histograms and sockets are that server's; boxes by state
// and the trace store are read from the shared store, so every server reports the same figure
// for them (sum the former across servers, take one server's value of the latter).
//
// Behind a bearer token: HOLM_METRICS_TOKEN (a scraper needs nothing more), or the server token.
// With neither set nobody reads them (401): metrics say what runs and how much, and open mode's
// loopback allowance is for trying /v1, not for watching a server.

const registers = [registry];

// What is, read at scrape time. A slow store makes a slow scrape, never a slow request.
new Gauge({
  name: "holm_boxes",
  help: "Boxes not removed, by state (from the store: the same on every server sharing it)",
  labelNames: ["state"],
  registers,
  async collect() {
    const by = await boxesByState();
    for (const [state, n] of Object.entries(by)) this.set({ state }, n);
  },
});

let traceSize: Promise<{ entries: number; frameBytes: number }> | undefined;
let traceSizeAt = 0;
/** Counting every trace entry is a scan: done at most every 30 s, whatever the scrape interval. */
function cachedTraceSize() {
  if (!traceSize || Date.now() - traceSizeAt > 30_000) {
    traceSizeAt = Date.now();
    traceSize = traceStoreSize().catch((err) => {
      traceSize = undefined;
      throw err;
    });
  }
  return traceSize;
}

new Gauge({
  name: "holm_trace_entries",
  help: "Trace entries kept (the whole store; recounted at most every 30 s)",
  registers,
  async collect() {
    this.set((await cachedTraceSize()).entries);
  },
});

new Gauge({
  name: "holm_trace_frame_bytes",
  help: "Bytes of trace frames (PNGs) kept (the whole store; recounted at most every 30 s)",
  registers,
  async collect() {
    this.set((await cachedTraceSize()).frameBytes);
  },
});

new Gauge({
  name: "holm_pool_boxes",
  help: "Warm pool boxes of this server, by spec key and whether wanted (HOLM_POOL) or ready now",
  labelNames: ["spec", "kind"],
  registers,
  async collect() {
    this.reset();
    for (const p of await poolSizes()) {
      this.set({ spec: p.key, kind: "wanted" }, p.size);
      this.set({ spec: p.key, kind: "ready" }, p.ready);
    }
  },
});

new Gauge({
  name: "holm_takeovers_held",
  help: "Screens a person holds now (every server's, as this server's copy of the store has them)",
  registers,
  collect() {
    this.set(takeoversHeld());
  },
});

function refuse(res: ServerResponse, err: ApiError) {
  res.statusCode = err.status;
  res.setHeader("content-type", "application/json");
  if (err.status === 401) res.setHeader("www-authenticate", 'Bearer realm="holm"');
  res.end(JSON.stringify(err.toJSON()));
}

/** Whether the request carries HOLM_METRICS_TOKEN or the server token (constant-time compares). */
export function metricsAllowed(authorization: string | undefined): boolean {
  const given = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1];
  if (!given) return false;
  const e = env();
  // Both compared, whichever matches, so the time says nothing about which one is set.
  const a = e.HOLM_METRICS_TOKEN ? safeEqual(given, e.HOLM_METRICS_TOKEN) : false;
  const b = e.HOLM_SERVER_TOKEN ? safeEqual(given, e.HOLM_SERVER_TOKEN) : false;
  return a || b;
}

/** Express middleware (server.ts): GET /metrics; anything else goes on. */
export function metricsRoute(req: IncomingMessage, res: ServerResponse, next: () => void) {
  const path = (req.url ?? "/").split("?")[0];
  if (path !== "/metrics") return next();
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.setHeader("allow", "GET");
    return refuse(res, new ApiError("method_not_allowed", `${req.method} is not allowed here; use GET`));
  }
  if (!METRICS_ON) return refuse(res, new ApiError("not_found", "metrics are off on this server (HOLM_METRICS=0)"));
  const e = env();
  if (!e.HOLM_METRICS_TOKEN && !e.HOLM_SERVER_TOKEN) {
    return refuse(res, new ApiError("unauthorized", "metrics need a token: set HOLM_METRICS_TOKEN (or HOLM_SERVER_TOKEN) and send it as Authorization: Bearer"));
  }
  if (!metricsAllowed(req.headers.authorization)) {
    return refuse(res, new ApiError("unauthorized", "send Authorization: Bearer <HOLM_METRICS_TOKEN or HOLM_SERVER_TOKEN>"));
  }
  registry
    .metrics()
    .then((text) => {
      res.statusCode = 200;
      res.setHeader("content-type", registry.contentType);
      res.setHeader("cache-control", "no-store");
      res.end(req.method === "HEAD" ? undefined : text);
    })
    .catch((err) => {
      log.error({ err }, "metrics failed");
      refuse(res, new ApiError("internal", "the metrics could not be read", { retryable: true }));
    });
}
