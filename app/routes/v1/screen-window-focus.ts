import { requireActor } from "~/edge/auth.server";
import { param, v1 } from "~/edge/route.server";
import { callAgent, requireScreen } from "~/models/screen.server";
import { assertMayDrive } from "~/models/takeover.server";
import { agentCall } from "~/protocol/agent";

const route = v1({
  POST: async (args) => {
    const actor = await requireActor(args.request);
    const t = await requireScreen(actor, param(args, "id"), param(args, "screen"));
    assertMayDrive(actor, t.box.id, t.screen, "focusing a window");
    return callAgent(t.box, agentCall("windowFocus", { n: t.screen, w: param(args, "window") }));
  },
});

export const loader = route.loader, action = route.action;
