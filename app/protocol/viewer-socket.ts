// The viewer socket's wire (seed 000, "Human control"): its path, its query, and the close codes
// the server ends a connection with. The socket module (server/viewer-socket.ts), the routes
// that hand out its URL and the console's noVNC client (app/components/vnc-viewer.tsx) read
// them here, so the three cannot disagree.

export type ViewerMode = "view" | "control";

/** `GET /v1/boxes/{id}/screens/{screen}/viewer/socket`: matches the path, capturing id and screen. */
export const VIEWER_SOCKET_PATH = /^\/v1\/boxes\/([^/]+)\/screens\/([^/]+)\/viewer\/socket$/;

/** The path of one screen's viewer socket (the ticket and mode go in its query). */
export function viewerSocketPath(boxId: string, screen: number): string {
  return `/v1/boxes/${encodeURIComponent(boxId)}/screens/${screen}/viewer/socket`;
}

/** The full URL: `base` is the server's http(s) origin; the scheme becomes ws(s). */
export function viewerSocketUrl(base: string, boxId: string, screen: number, q?: { ticket: string; mode?: ViewerMode }): string {
  const url = `${base.replace(/^http/, "ws").replace(/\/$/, "")}${viewerSocketPath(boxId, screen)}`;
  if (!q) return url;
  return `${url}?${new URLSearchParams({ ticket: q.ticket, ...(q.mode ? { mode: q.mode } : {}) })}`;
}

/** Why the server closed a viewer connection (WebSocket close codes 4000–4999 are ours). */
export const VIEWER_CLOSE = {
  /** Closed on purpose, e.g. the screen was given back (a control connection comes back to watch). */
  normal: 4000,
  /** The bytes are not RFB (bad ProtocolVersion, impossible lengths). */
  protocol: 4400,
  /** The ticket's issuer lost its access (key revoked or expired, member removed, signed out). */
  badTicket: 4401,
  /** Control is no longer this connection's: a person took the screen, or the role changed. */
  denied: 4403,
  /** The box was removed. */
  noBox: 4404,
  /** The viewer asked for updates faster than it read them. */
  tooSlow: 4408,
  /** The viewer stopped answering the heartbeat it asked for (its page froze, or went away). */
  unresponsive: 4410,
  /** The box is no longer running (stopped, unreachable). */
  notReady: 4409,
  /** A security type or message type the filter cannot frame (view mode), so nothing after it is safe. */
  unsupported: 4415,
  /** The screen's VNC server does not answer. */
  vncUnreachable: 4502,
  /** The screen has as many viewers as it takes (a box's direct password socket; the relay refuses the upgrade, 503). */
  unavailable: 4503,
} as const;

export type ViewerCloseCode = (typeof VIEWER_CLOSE)[keyof typeof VIEWER_CLOSE];

/**
 * A heartbeat the page answers, not its browser. WebSocket pings do not tell a frozen page
 * (Chromium's back/forward cache, a paused debugger) from a live one: the browser's network
 * stack answers them while the page's JavaScript is stopped (seen with Chromium 156). So a
 * client may ask for this one by sending a text frame (RFB itself is binary; noVNC ignores text
 * frames): the server then sends a text frame every `everyMs`, the client answers each with a
 * text frame, and the server closes with `unresponsive` when no text frame came for
 * `closeAfterMs`. Server-driven, so a hidden tab's throttled timers do not make it miss beats.
 * Clients that never send a text frame are never sent one.
 */
export const VIEWER_HEARTBEAT = { text: "holm-heartbeat", everyMs: 5_000, closeAfterMs: 15_000 } as const;
