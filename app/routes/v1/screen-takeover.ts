import { requireActor } from "~/edge/auth.server";
import { param, parseBody, refuseBody, v1 } from "~/edge/route.server";
import { requireScreen } from "~/models/screen.server";
import { giveBack, takeOver } from "~/models/takeover.server";
import { TakeoverSchema } from "~/protocol/api-box";

const route = v1({
  POST: async (args) => {
    const actor = await requireActor(args.request, "member");
    const t = await requireScreen(actor, param(args, "id"), param(args, "screen"));
    const body = await parseBody(args.request, TakeoverSchema);
    return takeOver(actor, t, { shared: body.shared ?? false });
  },
  DELETE: async (args) => {
    const actor = await requireActor(args.request, "member");
    const t = await requireScreen(actor, param(args, "id"), param(args, "screen"));
    await refuseBody(args.request);
    return giveBack(actor, t);
  },
});

export const loader = route.loader, action = route.action;
