import { requireActor } from "~/edge/auth.server";
import { param, v1 } from "~/edge/route.server";
import { resumeBox } from "~/models/box.server";

const route = v1({
  POST: async (args) => resumeBox(await requireActor(args.request), param(args, "id")),
});

export const loader = route.loader, action = route.action;
