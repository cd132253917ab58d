import { param, v1 } from "~/edge/route.server";
import { verifyTicket } from "~/models/ticket.server";
import { ApiError, notFound } from "~/utils/api-error.server";

// `GET /v1/boxes/{id}/screens/{screen}/viewer/socket?ticket=…&mode=view|control` is a WebSocket
// (server/viewer-socket.ts takes the upgrade before any route sees it), as the DevTools socket
// is. A plain GET lands here: the ticket is checked as the upgrade checks it (it is the
// credential; no bearer), then the caller is told to open a WebSocket, not a 404.
const route = v1({
  GET: async (args) => {
    const url = new URL(args.request.url);
    const mode = url.searchParams.get("mode") ?? "view";
    if (mode !== "view" && mode !== "control") throw new ApiError("bad_request", `mode must be view or control; got "${mode.slice(0, 20)}"`);
    const screen = param(args, "screen");
    if (!/^[0-9]{1,2}$/.test(screen)) throw notFound(`no screen ${screen.slice(0, 20)}`);
    verifyTicket(url.searchParams.get("ticket") ?? "", param(args, "id"), Number(screen), mode);
    throw new ApiError("bad_request", "this is the viewer WebSocket: connect with Upgrade: websocket (noVNC, ws) and this ticket");
  },
});

export const loader = route.loader, action = route.action;
