// DevTools of a screen's Chromium, for the server only: `/screens/{n}/cdp/<rest>` over HTTP and
// WebSocket, each request signed like every other agent call, relayed to 127.0.0.1:(9222+n).
// Chromium listens on loopback only and there is no other bridge: nothing in or outside the box
// reaches DevTools without the box's secret (a root process in the box excepted, see
// docs/security.md). Chromium answers 500 to a Host that is not an IP or localhost and 403 to
// a WebSocket with an Origin, so the relay sends `Host: 127.0.0.1:<port>` and never an Origin.
// Bodies are relayed as they are: DevTools URLs in them name 127.0.0.1:(9222+n), and a client
// maps `ws://127.0.0.1:<port>/X` to `/screens/{n}/cdp/X` itself (images/README.md).
import http from "node:http";
import net from "node:net";
import type { Duplex } from "node:stream";

export const CDP_PATH = /^\/screens\/([0-9]{1,2})\/cdp(\/[^?]*)?(\?.*)?$/;
const HOST = "127.0.0.1";
const CONNECT_TIMEOUT_MS = 5000;
/** Headers a WebSocket handshake needs passed on; everything else (Origin, cookies, our auth) stays here. */
const UPGRADE_HEADERS = ["sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions", "sec-websocket-protocol"];

export interface CdpTargetPath {
  screen: number;
  /** Path and query on Chromium's side, e.g. `/json/list` or `/devtools/page/ID`. */
  path: string;
}

export function cdpTarget(url: string): CdpTargetPath | undefined {
  const m = CDP_PATH.exec(url);
  if (!m) return undefined;
  return { screen: Number(m[1]), path: `${m[2] || "/"}${m[3] ?? ""}` };
}

/** Relays one HTTP request (the /json endpoints) and its answer. */
export function proxyCdpHttp(port: number, path: string, req: http.IncomingMessage, body: Buffer, res: http.ServerResponse): void {
  const headers: http.OutgoingHttpHeaders = { host: `${HOST}:${port}` };
  if (body.length) headers["content-length"] = body.length;
  const up = http.request({ host: HOST, port, method: req.method, path, headers, timeout: CONNECT_TIMEOUT_MS }, (ures) => {
    const out: http.OutgoingHttpHeaders = { "cache-control": "no-store" };
    for (const h of ["content-type", "content-length"]) if (ures.headers[h] !== undefined) out[h] = ures.headers[h];
    res.writeHead(ures.statusCode ?? 502, out);
    ures.pipe(res);
    ures.on("error", () => res.destroy());
  });
  up.on("timeout", () => up.destroy(new Error("timeout")));
  up.on("error", (err) => {
    if (res.headersSent) return void res.destroy();
    const data = JSON.stringify({ code: "failed", message: `Chromium's DevTools on ${HOST}:${port} does not answer: ${err.message}` });
    res.writeHead(422, { "content-type": "application/json", "content-length": Buffer.byteLength(data) });
    res.end(data);
  });
  up.end(body);
}

/** Relays a WebSocket upgrade (already authenticated) to Chromium and then the bytes both ways. */
export function proxyCdpUpgrade(port: number, path: string, req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
  const lines = [`GET ${path} HTTP/1.1`, `Host: ${HOST}:${port}`, "Connection: Upgrade", "Upgrade: websocket"];
  for (const h of UPGRADE_HEADERS) {
    const v = req.headers[h];
    if (typeof v === "string") lines.push(`${h}: ${v.replace(/[\r\n]/g, "")}`);
  }
  const up = net.connect({ host: HOST, port });
  up.setNoDelay(true);
  up.setTimeout(CONNECT_TIMEOUT_MS, () => up.destroy(new Error("timeout")));
  up.once("connect", () => {
    up.setTimeout(0);
    up.write(`${lines.join("\r\n")}\r\n\r\n`);
    if (head.length) up.write(head);
    up.pipe(socket);
    socket.pipe(up);
  });
  up.on("error", () => {
    if (!socket.destroyed) refuseUpgrade(socket, 502, "Chromium's DevTools does not answer");
  });
  up.on("close", () => socket.destroy());
  socket.on("error", () => up.destroy());
  socket.on("close", () => up.destroy());
}

export function refuseUpgrade(socket: Duplex, status: number, message: string): void {
  const code = ({ 400: "bad_request", 401: "unauthorized", 404: "not_found", 409: "denied", 503: "unavailable" } as Record<number, string>)[status] ?? "failed";
  const body = JSON.stringify({ code, message });
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? "Error"}\r\nconnection: close\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}
