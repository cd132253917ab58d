import { createAdapter } from "@socket.io/redis-adapter";
import { adapterClients } from "~/utils/cluster.server";
import type { Server as HttpServer } from "node:http";
import { Server as IoServer } from "socket.io";
import { type BoxJson, boxChanges, getBox, listBoxes } from "~/models/box.server";
import { type ForkChange, forkChanges, forkReplaysOf } from "~/models/fork-progress.server";
import { screenStatus } from "~/models/screen-status.server";
import { type Takeover, takeoverChanges } from "~/models/takeover.server";
import { onDirectViewersChange, onViewersChange } from "~/models/viewer.server";
import { allowSocketIoRequest } from "./http-edge";
import { type SessionActor, requireSession } from "./socket-auth";
import { attachTerminal } from "./terminal";
import { log } from "~/utils/log.server";

/**
 * socket.io for the console's live views. A connection authenticates with the session cookie
 * and joins the room of one workspace it belongs to; box changes go to the owner's room only.
 */
export function attachSocketIo(server: HttpServer): IoServer {
  const io = new IoServer(server, {
    serveClient: false,
    // engine.io's heartbeat is answered by the page's JavaScript (unlike WebSocket pings), so a
    // page that froze or vanished without closing is dropped within 30 s.
    pingInterval: 15_000,
    pingTimeout: 15_000,
    // Upgrades for other paths belong to the raw upgrade router; do not let engine.io close them.
    destroyUpgrade: false,
    // Same-origin only, and only under a Host this server answers to (server/http-edge.ts):
    // a cookie-authenticated socket must not open from another site's page.
    allowRequest: allowSocketIoRequest,
  });
  // Several servers (ADR 0021): a room's emit reaches its sockets on every server.
  const redis = adapterClients();
  if (redis) io.adapter(createAdapter(redis.pubClient, redis.subClient));
  const boxes = io.of("/boxes");
  boxes.use(requireSession("viewer"));
  boxes.on("connection", async (socket) => {
    const actor = socket.data.actor as SessionActor;
    await socket.join(`ws:${actor.workspaceId}`);
    // The replays of the workspace's forks as they are now; later changes come as `fork`.
    socket.emit("forks", forkReplaysOf(actor.workspaceId));
    socket.emit("boxes", await listBoxes(actor));
  });
  boxChanges.on("change", (box: BoxJson) => {
    if (box.owner) boxes.to(`ws:${box.owner}`).emit("box", box);
  });
  forkChanges.on("change", ({ owner, ...push }: ForkChange) => {
    if (owner) boxes.to(`ws:${owner}`).emit("fork", push);
  });
  // The box page's live counters and control banner: `screens` goes to the owner's room.
  const pushScreen = async (owner: string | null | undefined, boxId: string, screen: number) => {
    if (owner) boxes.to(`ws:${owner}`).emit("screens", await screenStatus(boxId, screen));
  };
  const failed = (err: unknown) => log.error({ err }, "screen status push failed");
  const viewersChanged = (c: { boxId: string; screen: number }) => {
    void getBox({ kind: "server" }, c.boxId)
      .then((box) => pushScreen(box.owner, c.boxId, c.screen), () => undefined)
      .catch(failed);
  };
  onViewersChange(viewersChanged);
  onDirectViewersChange(viewersChanged);
  takeoverChanges.on("change", (t: Takeover) => void pushScreen(t.owner, t.boxId, t.screen).catch(failed));
  attachTerminal(io);
  return io;
}
