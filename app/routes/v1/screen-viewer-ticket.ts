import { requireActor } from "~/edge/auth.server";
import { param, parseBody, v1 } from "~/edge/route.server";
import { issuerOf } from "~/models/actor";
import { getSettledBox } from "~/models/box.server";
import { directSockets } from "~/models/direct-viewer.server";
import { parseScreen } from "~/models/screen.server";
import { controlRefusal } from "~/models/takeover.server";
import { issueTicket } from "~/models/ticket.server";
import { viewerSocketUrl } from "~/protocol/viewer-socket";
import { publicUrl } from "~/utils/env.server";
import { TicketSchema } from "~/protocol/api-box";

// A ticket for the viewer socket: the box must be one the caller sees, and not `starting` or
// `failed` (409); a paused or stopped box gets one (its socket waits for a paused box, and answers
// 409 for a stopped one). People with the viewer role get view tickets only.
const route = v1({
  POST: async (args) => {
    // A viewer may ask (for a view ticket): POST needs member by default.
    const actor = await requireActor(args.request, "viewer");
    const box = await getSettledBox(actor, param(args, "id"));
    const body = await parseBody(args.request, TicketSchema);
    const screen = parseScreen(param(args, "screen"), box);
    // While a person holds the screen, control is theirs: asking for it answers 409, asking for
    // nothing gets a view ticket.
    const issued = issueTicket(actor, box, screen, body.mode, { controlBlocked: controlRefusal(issuerOf(actor), box.id, screen) });
    const socket = (mode: "view" | "control") => viewerSocketUrl(publicUrl(), box.id, screen, { ticket: issued.ticket, mode });
    // A box with direct viewer sockets (policy.auth token or password): the URLs go to the box.
    const direct = await directSockets(box, screen, issued, issuerOf(actor));
    return {
      ticket: issued.ticket,
      expires_at_ms: issued.expires_at_ms,
      mode: issued.mode,
      view_socket: socket("view"),
      ...(issued.mode === "control" ? { control_socket: socket("control") } : {}),
      ...direct,
    };
  },
});

export const loader = route.loader, action = route.action;
