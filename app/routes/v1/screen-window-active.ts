import { callAgent, requireScreen } from "~/models/screen.server";
import { requireActor } from "~/edge/auth.server";
import { param, v1 } from "~/edge/route.server";

const route = v1({
  GET: async (args) => {
    const t = await requireScreen(await requireActor(args.request), param(args, "id"), param(args, "screen"));
    return callAgent(t.box, "GET", `/screens/${t.screen}/windows/active`);
  },
});

export const loader = route.loader, action = route.action;
