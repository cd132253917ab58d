import { requireActor } from "~/edge/auth.server";
import { param, v1 } from "~/edge/route.server";
import { pauseBox } from "~/models/box.server";
import { assertMayChangeBox } from "~/models/takeover.server";

const route = v1({
  POST: async (args) => {
    const actor = await requireActor(args.request);
    await assertMayChangeBox(actor, param(args, "id"), "pausing the box");
    return pauseBox(actor, param(args, "id"));
  },
});

export const loader = route.loader, action = route.action;
