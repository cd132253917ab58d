import type { Server as HttpServer } from "node:http";
import { Server as IoServer } from "socket.io";
import { boxChanges, listBoxes } from "~/models/box.server";

/**
 * socket.io for the console's live views. `/boxes` pushes every box change; the console
 * merges it into its list. (Sessions and per-workspace rooms arrive with console log-in.)
 */
export function attachSocketIo(server: HttpServer): IoServer {
  const io = new IoServer(server, {
    serveClient: false,
    // Upgrades for other paths belong to the raw upgrade router; do not let engine.io close them.
    destroyUpgrade: false,
  });
  const boxes = io.of("/boxes");
  boxes.on("connection", async (socket) => {
    socket.emit("boxes", await listBoxes({ kind: "server" }));
  });
  boxChanges.on("change", (box) => boxes.emit("box", box));
  return io;
}
