import type { Server as HttpServer } from "node:http";
import type { Server as IoServer } from "socket.io";
import { adoptBoxes } from "~/models/box-sync.server";
import { registerProfileFlush } from "~/models/profile-flush.server";
import { registerBrowserRestarts } from "~/models/browser-restarts.server";
import { registerRecordingKeep } from "~/models/recording.server";
import { resumeBuilds } from "~/models/image.server";
import { loadTakeovers, stopTakeovers } from "~/models/takeover.server";
import { openStoredRuntimes } from "~/models/runtime-store.server";
import { startPool, stopPool } from "~/models/pool.server";
import { closeCluster, openCluster } from "~/utils/cluster.server";
import { closeDb, openDb } from "~/utils/db.server";
import { configFileResult, env } from "~/utils/env.server";
import { flushLog, log, noteOf } from "~/utils/log.server";
import { hotPath } from "./hot-path";
import { metricsRoute } from "./metrics";
import { requestLog } from "./request-log";
import { answerClientError, httpEdge } from "./http-edge";
import { cspNonceOf } from "./page-csp";
import { startLoops, stopLoops } from "./loops";
import { attachSocketIo } from "./realtime";
import { attachRevocation } from "./revocation";
import { registerCdpSocket } from "./cdp-socket";
import { attachUpgradeRouter } from "./upgrade-router";
import { registerViewerSocket } from "./viewer-socket";
import { startWebhooks, stopWebhooks } from "./webhooks";

let io: IoServer | undefined;

/** Everything server.ts needs from the bundle: config, boot, sockets, shutdown. */
export const holm = {
  /** Validates the environment; throws a readable error listing each bad variable. */
  config() {
    const e = env();
    const file = configFileResult();
    if (file?.file) log.info(`configuration from ${file.file}: ${file.applied.length} setting(s), ${file.overridden.length} overridden by the environment`);
    if (file?.skipped) log.warn(`configuration file not read: ${file.skipped}`);
    return { host: e.HOLM_SERVER_ADDR.host, port: e.HOLM_SERVER_ADDR.port, storage: e.HOLM_STORAGE_BACKEND, publicUrl: e.HOLM_PUBLIC_URL };
  },

  /** The logger (app/utils/log.server.ts): server.ts logs through this copy. */
  log,
  flushLog,
  /** The log note of a request, for React Router's load context (the /v1 routes fill it in). */
  noteOf: (req: import("node:http").IncomingMessage) => noteOf(req),
  /** The request's CSP nonce (the edge made it), for the render's scripts (server/page-csp.ts). */
  cspNonceOf,

  /** First middleware: one log line per request (HOLM_LOG_REQUESTS=0: none). */
  requestLog,

  /** GET /metrics (Prometheus), behind HOLM_METRICS_TOKEN or the server token. */
  metrics: metricsRoute,

  /** Middleware for every HTTP request, before static files and routes: Host, Origin, bodies. */
  edge: httpEdge,

  /** The hot /v1 routes in front of React Router (after the edge, before static files). */
  hot: hotPath,

  async boot() {
    // Before any box can be removed: a box with a browser profile closes its browser first.
    // In this order: recordings are copied out while the box still runs; the profile flush ends it.
    registerRecordingKeep();
    // Before the profile flush: a restart before the stop is traced, the flush's own quit is not.
    registerBrowserRestarts();
    registerProfileFlush();
    await openDb();
    await openCluster();
    // Takeovers are in the store (ADR 0021): they outlive every server's restart.
    const takeovers = await loadTakeovers();
    if (takeovers) log.info(`${takeovers} takeover(s) still held`);
    // Added engines first: boxes on them are taken back like the local ones (ADR 0019).
    const engines = await openStoredRuntimes();
    if (engines) log.info(`${engines} added runtime(s) opened`);
    const { adopted, known, scanned } = await adoptBoxes();
    log.info(`store ${env().HOLM_STORAGE_BACKEND}: ${known} box(es) recorded, ${adopted} adopted from the runtime`);
    // Builds queued or cut off before this start go back on the queue (ADR 0017).
    const builds = await resumeBuilds();
    if (builds) log.info(`${builds} image build(s) from before the restart queued again`);
    startLoops();
    await startWebhooks();
    await startPool({ scanned });
  },

  attach(server: HttpServer) {
    // A request Node cannot parse (a 20 kB query string) is answered with the /v1 error body.
    server.on("clientError", answerClientError);
    registerViewerSocket();
    registerCdpSocket();
    attachUpgradeRouter(server);
    io = attachSocketIo(server);
    attachRevocation(io);
  },

  async shutdown() {
    await stopLoops();
    await stopWebhooks();
    await stopPool();
    await new Promise<void>((resolve) => (io ? io.close(() => resolve()) : resolve()));
    stopTakeovers();
    await closeCluster();
    await closeDb();
  },
};

export type Holm = typeof holm;
