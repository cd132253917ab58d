// The in-box agent: `node /opt/holm/agent.mjs`, started by the box entrypoint.
import { loadConfig } from "./config";
import { Screen } from "./screen";
import { createServer } from "./http";
import { DirectViewers } from "./viewer";
import { serveVncFronts } from "./vnc-front";

const log = (msg: string, extra: Record<string, unknown> = {}): void => {
  process.stderr.write(`${JSON.stringify({ t: new Date().toISOString(), msg, ...extra })}\n`);
};

process.on("uncaughtException", (err) => log("uncaught exception", { error: err.stack ?? String(err) }));
process.on("unhandledRejection", (err) => log("unhandled rejection", { error: err instanceof Error ? err.stack : String(err) }));

const config = loadConfig();
if (!config.secret()) log("no agent secret yet (HOLM_AGENT_SECRET or the secret file): signed routes answer 401 until it is there");
const screens = Array.from({ length: config.screens }, (_, i) => new Screen(i, config));

// Connect early, and keep trying until each display answers: connecting lets go of any key or
// button a previous agent left down.
const warm = setInterval(() => {
  for (const s of screens) if (!s.connected) s.desk().catch(() => undefined);
}, 2000);
warm.unref();
for (const s of screens) s.desk().catch(() => undefined);

// A Wayland box's VNC ports are the agent's: the password in front of wayvnc's root-only socket.
const vncFronts = config.desktop === "wayland" ? serveVncFronts(config, (i, x, y) => screens[i]?.viewerMovedPointer(x, y)) : [];

const viewers = config.viewerAuth === "none" ? undefined : new DirectViewers(screens, config);
const server = createServer(screens, config, viewers);
server.listen(config.port, config.host, () => {
  const addr = server.address();
  log("listening", { port: typeof addr === "object" && addr ? addr.port : config.port, screens: config.screens, input: config.input });
});

// Direct viewer sockets (spec.policy.auth): their own port, so publishing it exposes nothing else.
const viewerServer = viewers?.serve();
viewerServer?.listen(config.viewerPort, config.host, () => log("direct viewer sockets", { port: config.viewerPort, auth: config.viewerAuth }));

let stopping = false;
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log("stopping", { signal });
  server.close();
  viewerServer?.close();
  for (const f of vncFronts) f.close();
  await Promise.all(
    screens.map(async (s) => {
      await s.holds.releaseAll(false).catch(() => undefined);
      if (s.recording) await s.recording.stop().catch(() => undefined);
      s.close();
    }),
  );
  process.exit(0);
}
process.on("SIGTERM", () => void stop("SIGTERM"));
process.on("SIGINT", () => void stop("SIGINT"));
