import { drivenScreen } from "~/edge/box-route.server";
import { param, v1 } from "~/edge/route.server";
import { callAgent } from "~/models/screen.server";
import { agentCall } from "~/protocol/agent";

const route = v1({
  POST: async (args) => {
    const { t } = await drivenScreen(args, "focusing a window");
    return callAgent(t.box, agentCall("windowFocus", { n: t.screen, w: param(args, "window") }));
  },
});

export const loader = route.loader, action = route.action;
