// Environment the box entrypoint (or a test) passes to the agent. See images/README.md.
import fs from "node:fs";
import { DIRECT_VIEWER_PORT, type ViewerAuth } from "../../../app/protocol/direct-viewer";
import { AGENT_PORT, AGENT_SECRET_PATH, CDP_PORT_BASE, VNC_PORT_BASE } from "../../../app/protocol/agent";

/** Where the server puts the box's agent secret as the box boots (root, 0600). */
export const SECRET_FILE = AGENT_SECRET_PATH;
export interface AgentConfig {
  screens: number;
  /** The agent secret, or "" while the server has not written it yet (every signed route is 401 then). */
  secret: () => string;
  host: string;
  port: number;
  displayBase: number;
  vncPortBase: number;
  cdpPortBase: number;
  /** "xtest" (default) or "xdotool": the latter forces the argv-only xdotool fallback. */
  input: "xtest" | "xdotool";
  /** x11, or wayland (headless sway; images/x11/agent/wayland.ts, docs/decisions/0030). */
  desktop: "x11" | "wayland";
  /** A Wayland box: where screen n's sway puts its sockets (`${runtimeBase}-${n}`) and wayvnc its own. */
  runtimeBase: string;
  recordingsDir: string;
  home: string;
  /** How long a client may take to show it handled keys before a keycode they used is remapped. */
  keyConfirmMs: number;
  boxId: string;
  /** Direct viewer sockets (spec.policy.auth): `none` serves none. */
  viewerAuth: ViewerAuth;
  viewerPort: number;
}

function viewerAuth(raw: string | undefined): ViewerAuth {
  if (!raw || raw === "none") return "none";
  if (raw === "token" || raw === "password") return raw;
  throw new Error(`HOLM_VIEWER_AUTH=${raw} is not none, token or password`);
}

function desktopOf(raw: string | undefined): "x11" | "wayland" {
  if (!raw || raw === "x11") return "x11";
  if (raw === "wayland") return "wayland";
  throw new Error(`HOLM_DESKTOP=${raw} is not x11 or wayland`);
}

function int(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name}=${raw} is not an integer in ${min}..${max}`);
  return n;
}

/**
 * The secret from HOLM_AGENT_SECRET (tests run the agent that way) or else from the secret file,
 * which the server writes while the box boots: read until it is there whole (it ends with a
 * newline), then kept. The variable is removed from this process's environment at once, so
 * nothing the agent starts can inherit it.
 */
function secretSource(): () => string {
  const fromEnv = process.env.HOLM_AGENT_SECRET;
  delete process.env.HOLM_AGENT_SECRET;
  if (fromEnv) return () => fromEnv;
  const file = process.env.HOLM_AGENT_SECRET_FILE || SECRET_FILE;
  let secret = "";
  return () => {
    if (secret) return secret;
    try {
      const text = fs.readFileSync(file, "utf8");
      if (text.endsWith("\n") && text.trim()) secret = text.trim();
    } catch {
      // not written yet
    }
    return secret;
  };
}

export function loadConfig(): AgentConfig {
  const input = process.env.HOLM_AGENT_INPUT === "xdotool" ? "xdotool" : "xtest";
  return {
    screens: int("HOLM_SCREENS", 1, 1, 8),
    secret: secretSource(),
    host: process.env.HOLM_AGENT_HOST || "0.0.0.0",
    port: int("HOLM_AGENT_PORT", AGENT_PORT, 0, 65535),
    displayBase: int("HOLM_DISPLAY_BASE", 99, 0, 60000),
    vncPortBase: int("HOLM_VNC_PORT_BASE", VNC_PORT_BASE, 1, 65535),
    cdpPortBase: int("HOLM_CDP_PORT_BASE", CDP_PORT_BASE, 1, 65535),
    input,
    desktop: desktopOf(process.env.HOLM_DESKTOP),
    runtimeBase: process.env.HOLM_WAYLAND_RUNTIME || "/run/holm/wl",
    recordingsDir: process.env.HOLM_RECORDINGS_DIR || "/tmp/holm-recordings",
    home: process.env.HOME || "/root",
    keyConfirmMs: int("HOLM_KEY_CONFIRM_MS", 15_000, 100, 600_000),
    boxId: process.env.HOLM_BOX_ID || "",
    viewerAuth: viewerAuth(process.env.HOLM_VIEWER_AUTH),
    viewerPort: int("HOLM_VIEWER_PORT", DIRECT_VIEWER_PORT, 0, 65535),
  };
}
