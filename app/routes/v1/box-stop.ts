import { requireActor } from "~/edge/auth.server";
import { param, v1 } from "~/edge/route.server";
import { stopBox } from "~/models/box.server";
import { assertMayChangeBox } from "~/models/takeover.server";

const route = v1({
  POST: async (args) => {
    const actor = await requireActor(args.request);
    await assertMayChangeBox(actor, param(args, "id"), "stopping the box");
    return stopBox(actor, param(args, "id"));
  },
});

export const loader = route.loader, action = route.action;
