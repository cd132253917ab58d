import { drivenScreen } from "~/edge/box-route.server";
import { param, refuseBody, v1 } from "~/edge/route.server";
import { callAgent } from "~/models/screen.server";
import { agentCall } from "~/protocol/agent";

const route = v1({
  POST: async (args) => {
    const { t } = await drivenScreen(args, "focusing a window");
    await refuseBody(args.request);
    return callAgent(t.box, agentCall("windowFocus", { n: t.screen, w: param(args, "window") }));
  },
});

export const loader = route.loader, action = route.action;
