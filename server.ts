import { createServer } from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequestHandler } from "@react-router/express";
import express from "express";
import type { ServerBuild } from "react-router";

// One HTTP server: express + the React Router handler + socket.io + raw WebSocket upgrades.
// The domain (models, sockets, loops) comes from the React Router server bundle's entry module,
// never imported here, so the process holds exactly one copy of it.

type Holm = {
  config(): { host: string; port: number; storage: string; publicUrl?: string };
  /** The server's logger (pino; one copy, the bundle's). */
  log: import("pino").Logger;
  flushLog(): Promise<void>;
  noteOf(req: import("node:http").IncomingMessage): object | undefined;
  /** The nonce of the request's script policy, which the edge set (server/page-csp.ts). */
  cspNonceOf(req: import("node:http").IncomingMessage): string | undefined;
  /** One log line per request (first), and GET /metrics. */
  requestLog: express.RequestHandler;
  metrics: express.RequestHandler;
  edge: express.RequestHandler;
  hot: express.RequestHandler;
  boot(): Promise<void>;
  attach(server: import("node:http").Server): void;
  shutdown(): Promise<void>;
};

const production = process.env.NODE_ENV === "production";
const root = production ? path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..") : process.cwd();

const app = express();
app.disable("x-powered-by");
const server = createServer(app);

let build: ServerBuild | (() => Promise<ServerBuild>);
let holm: Holm;

if (production) {
  const serverBuild = (await import(path.join(root, "build/server/index.js"))) as ServerBuild;
  build = serverBuild;
  holm = (serverBuild.entry.module as unknown as { holm: Holm }).holm;
} else {
  const vite = await import("vite");
  const devServer = await vite.createServer({ server: { middlewareMode: true, hmr: { server } }, appType: "custom" });
  app.use(devServer.middlewares);
  const load = () => devServer.ssrLoadModule("virtual:react-router/server-build") as Promise<ServerBuild>;
  build = load;
  // In development a module edit reloads the routes; the realtime side keeps the first copy.
  holm = ((await load()).entry.module as unknown as { holm: Holm }).holm;
}

const log = holm.log;
// First: every request gets its log line, whoever answers it (server/request-log.ts).
app.use(holm.requestLog);
// Before anything answers: the Host, Origin and body rules of server/http-edge.ts (ADR 0005).
app.use(holm.edge);
// The hot /v1 routes (a batch, a frame, a box, the list) skip React Router (ADR 0015); they
// never name a static file, so they go before the static lookups too.
app.use(holm.hot);
// GET /metrics (Prometheus; server/metrics.ts): behind its own token, after the HTTP edge.
app.use(holm.metrics);
if (production) {
  app.use("/assets", express.static(path.join(root, "build/client/assets"), { immutable: true, maxAge: "1y" }));
  app.use(express.static(path.join(root, "build/client"), { maxAge: "1h", index: false }));
}

let config: ReturnType<Holm["config"]>;
try {
  config = holm.config();
} catch (err) {
  log.fatal((err as Error).message);
  await holm.flushLog();
  process.exit(2);
}

// Behind a proxy (HOLM_PUBLIC_URL set), the scheme and host people use come from the proxy on
// loopback as X-Forwarded-Proto/-Host, so the request URL, the cookie's Secure flag and React
// Router's own check of an action's Origin see https://public-host. Nobody else is believed.
if (config.publicUrl) app.set("trust proxy", "loopback");

await holm.boot();
holm.attach(server);
// Mounted with no path pattern: express 5 decodes a pattern's parameters and answers a path that
// does not decode (`/boxes/%zz`) with its own bare "Bad Request" page. React Router matches the
// path as it came (an undecodable escape stays as is), so such a console path gets the console's
// styled "Not found". (/v1 and /mcp paths that do not decode are refused earlier, by http-edge.)
app.use(
  // The peer address, for per-address log-in limits and open mode's loopback rule: `req.ip`, the
  // socket's address, or behind a proxy (trust proxy, above) the client that the loopback proxy
  // names last in X-Forwarded-For; a header from anyone else is never believed.
  // `note`: the request's log line, which the /v1 routes fill in (server/request-log.ts).
  // `cspNonce`: the page's script nonce, which its policy names (app/entry.server.tsx puts it on
  // every script the render writes).
  createRequestHandler({
    build,
    getLoadContext: (req) => ({ remoteAddress: req.ip ?? req.socket.remoteAddress ?? "unknown", note: holm.noteOf(req), cspNonce: holm.cspNonceOf(req) }),
  }),
);

server.listen(config.port, config.host, () => {
  const addr = server.address();
  const shown = typeof addr === "object" && addr ? `${addr.address}:${addr.port}` : String(addr);
  log.info(`listening on http://${shown} (${production ? "production" : "development"})`);
});

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  log.info(`${signal}: shutting down`);
  const force = setTimeout(() => process.exit(1), 10_000);
  force.unref();
  server.close();
  server.closeIdleConnections();
  try {
    await holm.shutdown();
  } catch (err) {
    log.error({ err }, "shutdown failed");
  }
  await holm.flushLog();
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
