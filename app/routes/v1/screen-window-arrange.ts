import { drivenScreen } from "~/edge/box-route.server";
import { param, parseBody, v1 } from "~/edge/route.server";
import { ArrangeSchema } from "~/models/action-schema.server";
import { callAgent } from "~/models/screen.server";
import { agentCall } from "~/protocol/agent";

const route = v1({
  POST: async (args) => {
    const { t } = await drivenScreen(args, "arranging a window");
    const body = await parseBody(args.request, ArrangeSchema);
    // agentCall encodes the window ref (a title may hold spaces or slashes).
    return callAgent(t.box, agentCall("windowArrange", { n: t.screen, w: param(args, "window") }), body);
  },
});

export const loader = route.loader, action = route.action;
