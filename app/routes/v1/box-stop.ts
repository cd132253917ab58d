import { stopBox } from "~/models/box.server";
import { requireActor } from "~/utils/auth.server";
import { param, v1 } from "~/utils/route.server";

const route = v1({
  POST: async (args) => stopBox(await requireActor(args.request), param(args, "id")),
});

export const loader = route.loader;
export const action = route.action;
// Read by the auth-matrix test: the methods this route serves.
export const handle = { methods: ["POST"] };
