import type { Server as HttpServer } from "node:http";
import { Server as IoServer } from "socket.io";
import { type BoxJson, boxChanges, listBoxes } from "~/models/box.server";
import { SESSION_COOKIE, readCookie, validateSession } from "~/models/session.server";
import { roleIn } from "~/models/workspace.server";

/**
 * socket.io for the console's live views. A connection authenticates with the session cookie
 * and joins the room of one workspace it belongs to; box changes go to the owner's room only.
 */
export function attachSocketIo(server: HttpServer): IoServer {
  const io = new IoServer(server, {
    serveClient: false,
    // Upgrades for other paths belong to the raw upgrade router; do not let engine.io close them.
    destroyUpgrade: false,
  });
  const boxes = io.of("/boxes");
  boxes.use(async (socket, next) => {
    try {
      const token = readCookie(socket.handshake.headers.cookie, SESSION_COOKIE);
      const found = token ? await validateSession(token) : undefined;
      if (!found) return next(new Error("unauthorized"));
      const workspace = String(socket.handshake.auth?.workspace ?? found.session.workspace_id ?? "");
      const role = await roleIn(workspace, found.user.id);
      if (!role) return next(new Error("not a member of that workspace"));
      socket.data.workspace = workspace;
      socket.data.role = role;
      socket.data.userId = found.user.id;
      next();
    } catch (err) {
      console.error("[holm] socket auth failed:", err);
      next(new Error("internal"));
    }
  });
  boxes.on("connection", async (socket) => {
    const workspace = socket.data.workspace as string;
    await socket.join(`ws:${workspace}`);
    socket.emit(
      "boxes",
      await listBoxes({ kind: "workspace", workspaceId: workspace, role: socket.data.role, via: "session", userId: socket.data.userId }),
    );
  });
  boxChanges.on("change", (box: BoxJson) => {
    if (box.owner) boxes.to(`ws:${box.owner}`).emit("box", box);
  });
  return io;
}
