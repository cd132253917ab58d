import { requireActor } from "~/edge/auth.server";
import { param, parseBody, v1 } from "~/edge/route.server";
import { ArrangeSchema } from "~/models/action-schema.server";
import { callAgent, requireScreen } from "~/models/screen.server";
import { assertMayDrive } from "~/models/takeover.server";
import { agentCall } from "~/protocol/agent";

const route = v1({
  POST: async (args) => {
    const actor = await requireActor(args.request);
    const t = await requireScreen(actor, param(args, "id"), param(args, "screen"));
    assertMayDrive(actor, t.box.id, t.screen, "arranging a window");
    const body = await parseBody(args.request, ArrangeSchema);
    const w = encodeURIComponent(param(args, "window"));
    return callAgent(t.box, agentCall("windowArrange", { n: t.screen, w }), body);
  },
});

export const loader = route.loader, action = route.action;
