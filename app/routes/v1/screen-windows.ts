import { requireActor } from "~/edge/auth.server";
import { param, refuseQuery, v1 } from "~/edge/route.server";
import { callAgent, requireScreen } from "~/models/screen.server";
import { agentCall } from "~/protocol/agent";

const route = v1({
  GET: async (args) => {
    const t = await requireScreen(await requireActor(args.request), param(args, "id"), param(args, "screen"));
    refuseQuery(args.request);
    return callAgent(t.box, agentCall("windows", { n: t.screen }));
  },
});

export const loader = route.loader, action = route.action;
