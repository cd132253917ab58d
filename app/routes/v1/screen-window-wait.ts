import { requireActor } from "~/edge/auth.server";
import { param, parseBody, v1 } from "~/edge/route.server";
import { WaitWindowSchema } from "~/models/action-schema.server";
import { callAgent, requireScreen } from "~/models/screen.server";
import { agentCall } from "~/protocol/agent";

const route = v1({
  POST: async (args) => {
    const actor = await requireActor(args.request);
    const t = await requireScreen(actor, param(args, "id"), param(args, "screen"));
    const body = await parseBody(args.request, WaitWindowSchema);
    return callAgent(t.box, agentCall("windowWait", { n: t.screen }), body, 40_000);
  },
});

export const loader = route.loader, action = route.action;
