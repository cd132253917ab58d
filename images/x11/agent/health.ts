// Health that probes the real thing: an X round trip on the warm connection, a TCP connect to
// VNC, and CDP's /json/version. All screens and probes run at once.
import net from "node:net";
import http from "node:http";
import type { Screen } from "./screen";
import { waylandWindows } from "./wayland-views";

import type { AgentHealth, ScreenHealth } from "../../../app/protocol/agent";

function tcpProbe(port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.createConnection({ host: "127.0.0.1", port });
    const done = (ok: boolean): void => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.on("connect", () => done(true));
    sock.on("error", () => done(false));
  });
}

const cdpAgent = new http.Agent({ keepAlive: true, maxSockets: 2 });

function cdpProbe(port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ host: "127.0.0.1", port, path: "/json/version", agent: cdpAgent, timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(false));
  });
}

/** Wayland screens whose browser window sway has shown and focused once since the agent started. */
const windowSeen = new WeakSet<Screen>();

/**
 * Wayland: has sway shown Chromium's window and given it the keyboard? Chromium's DevTools answer
 * before that (here `windows` listed nothing right after ready on a quiet machine), and a click
 * or typed text sent then reaches no window (a loaded CI run lost a fresh box's whole text).
 * Latched: once seen, a person may close the window without making the box unhealthy.
 */
async function windowProbe(s: Screen, timeoutMs: number): Promise<boolean | undefined> {
  if (!s.isWayland) return undefined;
  if (windowSeen.has(s)) return true;
  try {
    const shown = (await waylandWindows(await s.wayland(timeoutMs))).some((w) => /chromium/i.test(w.class) && w.active);
    if (shown) windowSeen.add(s);
    return shown;
  } catch {
    return false;
  }
}

export async function health(screens: Screen[]): Promise<AgentHealth> {
  const out = await Promise.all(
    screens.map(async (s): Promise<ScreenHealth> => {
      const [x, vnc, cdp, window] = await Promise.all([
        s.probe(500),
        // On Wayland, the agent's own session with wayvnc says it serves: a probe that connects
        // and hangs up at once would kill wayvnc 0.5 (wayland.ts closeWayvnc).
        s.isWayland ? Promise.resolve(s.connected) : tcpProbe(s.config.vncPortBase + s.index, 300),
        cdpProbe(s.config.cdpPortBase + s.index, 500),
        windowProbe(s, 500),
      ]);
      return { screen: s.index, display: s.display, x, vnc, cdp, ...(window === undefined ? {} : { window }) };
    }),
  );
  return { ok: out.every((h) => h.x), screens: out };
}
