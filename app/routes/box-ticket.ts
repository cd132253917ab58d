import { requireWorkspaceJson } from "~/edge/console.server";
import { issuerOf } from "~/models/actor";
import { getSettledBox } from "~/models/box.server";
import { parseScreen } from "~/models/screen.server";
import { controlRefusal } from "~/models/takeover.server";
import { type ViewerMode, issueTicket } from "~/models/ticket.server";
import { viewerSocketPath } from "~/protocol/viewer-socket";
import { ApiError, errorResponse } from "~/utils/api-error.server";
import type { Route } from "./+types/box-ticket";

// GET /boxes/:id/ticket?screen=n&mode=view|control — a fresh viewer ticket for the console's
// noVNC viewer, by session (the page asks again on every reconnect, so a ticket never goes stale).
// JSON both ways: a person who is not signed in gets 401, not the log-in page.

export async function loader({ request, params }: Route.LoaderArgs) {
  try {
    const ctx = await requireWorkspaceJson(request, "viewer", params.id);
    const url = new URL(request.url);
    const modeRaw = url.searchParams.get("mode") ?? "view";
    if (modeRaw !== "view" && modeRaw !== "control") throw new ApiError("bad_request", "mode must be view or control");
    const box = await getSettledBox(ctx.actor, params.id);
    const screen = parseScreen(url.searchParams.get("screen") ?? "0", box);
    const controlBlocked = controlRefusal(issuerOf(ctx.actor), box.id, screen);
    const issued = issueTicket(ctx.actor, box, screen, modeRaw as ViewerMode, { controlBlocked });
    const path = `${viewerSocketPath(box.id, screen)}?${new URLSearchParams({ ticket: issued.ticket, mode: issued.mode })}`;
    return Response.json(
      { ticket: issued.ticket, expires_at_ms: issued.expires_at_ms, mode: issued.mode, screen, path },
      { headers: { "cache-control": "no-store" } },
    );
  } catch (e) {
    return errorResponse(e);
  }
}
