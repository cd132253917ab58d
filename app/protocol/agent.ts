// The server ↔ in-box agent wire (images/README.md is the prose): where the agent and the VNC
// servers listen, where the box's secrets go, every agent route, and the health answer. The agent
// registers its routes from AGENT_ROUTES and the server builds paths with agentPath(), so a
// path cannot be spelt two ways.

export const AGENT_PORT = 7070;
/** Screen n's x11vnc listens on VNC_PORT_BASE + n; its Chromium's DevTools on CDP_PORT_BASE + n (box-local). */
export const VNC_PORT_BASE = 5900;
export const CDP_PORT_BASE = 9222;

export const vncPort = (screen: number): number => VNC_PORT_BASE + screen;

/** Where the server writes the box's secrets as it boots (root, 0600; images/README.md). */
export const AGENT_SECRET_PATH = "/etc/holm/agent.secret";
export const VNC_PASSWD_PATH = "/etc/holm/vnc.passwd";

export interface ScreenHealth {
  screen: number;
  display: string;
  x: boolean;
  vnc: boolean;
  cdp: boolean;
  /**
   * Wayland: sway has shown the browser's window and given it the keyboard, at least once since
   * the agent started (latched: a person may close it later). Absent on X11, where Chromium's
   * window is mapped before its DevTools answer.
   */
  window?: boolean;
}

/** `GET /health`: 200 when every probe of every screen passed, else 503, with the same body. */
export interface AgentHealth {
  ok: boolean;
  screens: ScreenHealth[];
}

/** A tab as the agent lists it (`tabs`): target id, the label `open_url` gave it, front one `active`. */
export interface TabInfo {
  id: string;
  label?: string;
  url: string;
  title: string;
  active: boolean;
}

/** Every route the agent serves: method and path (`:name` is one path segment). */
export const AGENT_ROUTES = {
  health: ["GET", "/health"],
  batch: ["POST", "/screens/:n/batch"],
  frame: ["GET", "/screens/:n/frame"],
  cursor: ["GET", "/screens/:n/cursor"],
  clipboardRead: ["GET", "/screens/:n/clipboard"],
  clipboardWrite: ["PUT", "/screens/:n/clipboard"],
  windows: ["GET", "/screens/:n/windows"],
  windowActive: ["GET", "/screens/:n/windows/active"],
  windowWait: ["POST", "/screens/:n/windows/wait"],
  windowFocus: ["POST", "/screens/:n/windows/:w/focus"],
  windowArrange: ["POST", "/screens/:n/windows/:w/arrange"],
  windowClose: ["DELETE", "/screens/:n/windows/:w"],
  tabs: ["GET", "/screens/:n/tabs"],
  tabFocus: ["POST", "/screens/:n/tabs/:tab/focus"],
  tabClose: ["DELETE", "/screens/:n/tabs/:tab"],
  recordingStatus: ["GET", "/screens/:n/recording"],
  recordingStart: ["POST", "/screens/:n/recording"],
  recordingStop: ["DELETE", "/screens/:n/recording"],
  release: ["POST", "/screens/:n/release"],
  guard: ["POST", "/screens/:n/guard"],
  directViewers: ["GET", "/viewers"],
  directViewersClose: ["POST", "/viewers/close"],
  directViewerInputs: ["POST", "/viewers/inputs"],
  directViewersPassword: ["POST", "/viewers/password"],
  exec: ["POST", "/exec"],
  fileRead: ["GET", "/files"],
  fileWrite: ["PUT", "/files"],
  fileList: ["GET", "/files/list"],
  fileGrep: ["POST", "/files/grep"],
  fileGlob: ["GET", "/files/glob"],
} as const satisfies Record<string, readonly [AgentMethod, string]>;

export type AgentMethod = "GET" | "POST" | "PUT" | "DELETE";
export type AgentRoute = keyof typeof AGENT_ROUTES;

type ParamNames<P extends string> = P extends `${string}:${infer N}/${infer Rest}`
  ? N | ParamNames<Rest>
  : P extends `${string}:${infer N}`
    ? N
    : never;
/** The values a route's path needs, by name: `{n: 0, w: "0x1a00004"}`. */
export type AgentParams<R extends AgentRoute> = Record<ParamNames<(typeof AGENT_ROUTES)[R][1]>, string | number>;

/** The method of a route. */
export const agentMethod = (route: AgentRoute): AgentMethod => AGENT_ROUTES[route][0];

/**
 * The path (and query) of one call: each `:name` replaced by its value, URL-encoded; query
 * entries that are undefined are left out.
 */
export function agentPath<R extends AgentRoute>(
  route: R,
  params: AgentParams<R>,
  query?: Record<string, string | number | boolean | undefined>,
): string {
  const values = params as Record<string, string | number>;
  const path = AGENT_ROUTES[route][1].replace(/:([a-z]+)/g, (_, name: string) => {
    const v = values[name];
    if (v === undefined) throw new Error(`agent route ${route} needs ${name}`);
    return encodeURIComponent(String(v));
  });
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) q.set(k, String(v));
  const qs = q.toString();
  return qs ? `${path}?${qs}` : path;
}

/** One call to the agent: its method and path (with query). */
export interface AgentCall {
  method: AgentMethod;
  path: string;
}

export function agentCall<R extends AgentRoute>(
  route: R,
  params: AgentParams<R>,
  query?: Record<string, string | number | boolean | undefined>,
): AgentCall {
  return { method: agentMethod(route), path: agentPath(route, params, query) };
}

/** What the agent answers of a screen recording (`record` step, recording routes; images/x11/agent/record.ts). */
export interface RecordState {
  recording: boolean;
  path?: string;
  fps?: number;
  /** The video's first frame (not ffmpeg's spawn): where the trace places the video. */
  started_at_ms?: number;
  duration_ms?: number;
  bytes?: number;
}
