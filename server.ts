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
  config(): { host: string; port: number; storage: string };
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
  app.use("/assets", express.static(path.join(root, "build/client/assets"), { immutable: true, maxAge: "1y" }));
  app.use(express.static(path.join(root, "build/client"), { maxAge: "1h", index: false }));
} else {
  const vite = await import("vite");
  const devServer = await vite.createServer({ server: { middlewareMode: true, hmr: { server } }, appType: "custom" });
  app.use(devServer.middlewares);
  const load = () => devServer.ssrLoadModule("virtual:react-router/server-build") as Promise<ServerBuild>;
  build = load;
  // In development a module edit reloads the routes; the realtime side keeps the first copy.
  holm = ((await load()).entry.module as unknown as { holm: Holm }).holm;
}

let config: ReturnType<Holm["config"]>;
try {
  config = holm.config();
} catch (err) {
  console.error(`[holm] ${(err as Error).message}`);
  process.exit(2);
}

// Console forms must come from the console: a cross-site POST carries another Origin. /v1 takes
// bearer tokens, not cookies, so it is not exposed to this.
app.use((req, res, next) => {
  if (req.method === "GET" || req.method === "HEAD" || req.path.startsWith("/v1/")) return next();
  const origin = req.headers.origin;
  if (origin && origin !== "null") {
    let host: string | undefined;
    try {
      host = new URL(origin).host;
    } catch {
      host = undefined;
    }
    if (host !== req.headers.host) {
      res.status(403).type("text/plain").send("cross-site form submission refused");
      return;
    }
  }
  next();
});

await holm.boot();
holm.attach(server);
app.all(
  "/{*splat}",
  // The peer address, for per-address limits (log-in); never a client-supplied header.
  createRequestHandler({ build, getLoadContext: (req) => ({ remoteAddress: req.socket.remoteAddress ?? "unknown" }) }),
);

server.listen(config.port, config.host, () => {
  const addr = server.address();
  const shown = typeof addr === "object" && addr ? `${addr.address}:${addr.port}` : String(addr);
  console.log(`[holm] listening on http://${shown} (${production ? "production" : "development"})`);
});

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  console.log(`[holm] ${signal}: shutting down`);
  const force = setTimeout(() => process.exit(1), 10_000);
  force.unref();
  server.close();
  server.closeIdleConnections();
  try {
    await holm.shutdown();
  } catch (err) {
    console.error("[holm] shutdown failed:", err);
  }
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
