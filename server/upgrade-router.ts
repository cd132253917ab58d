import { type IncomingMessage, STATUS_CODES, type Server } from "node:http";
import type { Duplex } from "node:stream";
import { ApiError, ERROR_STATUS } from "~/utils/api-error.server";
import { socketRefusal } from "./http-edge";
import { log } from "~/utils/log.server";

// Raw WebSocket upgrades by path (one module per socket path registers here). socket.io and
// Vite's HMR install their own upgrade listeners; anything else is answered 404 and closed.
// A foreign Host (DNS rebinding) is refused with 421 before any route sees the upgrade; socket.io
// checks Host and Origin itself (allowRequest in realtime.ts).

export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer, match: RegExpExecArray) => void;

const routes: { pattern: RegExp; handler: UpgradeHandler }[] = [];

/**
 * Answers a refused upgrade with plain HTTP: the seed's status for the code (ERROR_STATUS) and
 * the error body, like every /v1 answer.
 */
export function refuseUpgrade(socket: Duplex, err: ApiError) {
  if (socket.destroyed) return;
  const status = ERROR_STATUS[err.code];
  const body = JSON.stringify(err.toJSON());
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}\r\nconnection: close\r\n` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

/**
 * Why ws's handleUpgrade would refuse this handshake (a GET, a key of 16 bytes, version 13 or
 * 8), if it would. A socket module that opens its upstream before the upgrade asks first: ws
 * answers a refused handshake itself and never calls back, so what was opened stayed open. It
 * still closes its upstream with the client's connection, for what ws refuses beyond these.
 */
export function handshakeRefusal(req: IncomingMessage): ApiError | undefined {
  const bad = (why: string) => new ApiError("bad_request", `${why}; this is a WebSocket`);
  if (req.method !== "GET") return bad("a WebSocket handshake is a GET");
  if (req.headers.upgrade?.toLowerCase() !== "websocket") return bad("Upgrade: websocket is missing");
  if (!/^[+/0-9A-Za-z]{22}==$/.test(req.headers["sec-websocket-key"] ?? "")) return bad("Sec-WebSocket-Key is missing or is not 16 bytes in base64");
  if (!["8", "13"].includes(req.headers["sec-websocket-version"] ?? "")) return bad("Sec-WebSocket-Version must be 13");
  return undefined;
}

export function registerUpgrade(pattern: RegExp, handler: UpgradeHandler) {
  routes.push({ pattern, handler });
}

const DEV = process.env.NODE_ENV !== "production";

export function attachUpgradeRouter(server: Server) {
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (path.startsWith("/socket.io/")) return;
    // In development Vite's own listener answers its HMR socket; in production nothing would,
    // and the connection would hang unanswered (no timeout applies after an upgrade).
    if (DEV && req.headers["sec-websocket-protocol"]?.includes("vite-hmr")) return;
    const refused = socketRefusal(req, false);
    if (refused) return refuseUpgrade(socket, refused);
    for (const { pattern, handler } of routes) {
      const match = pattern.exec(path);
      if (match) {
        try {
          handler(req, socket, head, match);
        } catch (err) {
          log.error({ err }, "upgrade handler failed");
          socket.destroy();
        }
        return;
      }
    }
    socket.end("HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
  });
}
