import { v1 } from "~/edge/route.server";
import { cdpAccess } from "~/models/cdp-access.server";
import { ApiError } from "~/utils/api-error.server";

// `GET /v1/cdp/{token}/devtools/…` is a WebSocket (server/cdp-socket.ts takes the upgrade
// before any route sees it). A plain GET lands here: the token is checked as it would be, then
// the caller is told to open a WebSocket.
const route = v1({
  GET: async ({ params }) => {
    await cdpAccess(params.token ?? "");
    throw new ApiError("bad_request", "this is the DevTools WebSocket: connect with Upgrade: websocket (Playwright, Puppeteer, ws)");
  },
});

export const loader = route.loader, action = route.action;
