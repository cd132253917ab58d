import { type IncomingMessage, STATUS_CODES, type Server } from "node:http";
import type { Duplex } from "node:stream";
import { socketRefusal } from "./http-edge";

// Raw WebSocket upgrades by path (one module per socket path registers here). socket.io and
// Vite's HMR install their own upgrade listeners; anything else is answered 404 and closed.
// A foreign Host (DNS rebinding) is refused with 421 before any route sees the upgrade; socket.io
// checks Host and Origin itself (allowRequest in realtime.ts).

export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer, match: RegExpExecArray) => void;

const routes: { pattern: RegExp; handler: UpgradeHandler }[] = [];

export function registerUpgrade(pattern: RegExp, handler: UpgradeHandler) {
  routes.push({ pattern, handler });
}

export function attachUpgradeRouter(server: Server) {
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (path.startsWith("/socket.io/")) return;
    if (req.headers["sec-websocket-protocol"]?.includes("vite-hmr")) return;
    const refused = socketRefusal(req, false);
    if (refused) {
      const body = JSON.stringify(refused.toJSON());
      socket.end(
        `HTTP/1.1 ${refused.status} ${STATUS_CODES[refused.status]}\r\nconnection: close\r\ncontent-type: application/json\r\n` +
          `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      return;
    }
    for (const { pattern, handler } of routes) {
      const match = pattern.exec(path);
      if (match) {
        try {
          handler(req, socket, head, match);
        } catch (err) {
          console.error("[holm] upgrade handler failed:", err);
          socket.destroy();
        }
        return;
      }
    }
    socket.end("HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
  });
}
