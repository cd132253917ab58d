import { requireActor } from "~/edge/auth.server";
import { param, refuseQuery, v1 } from "~/edge/route.server";
import { listRuntimeImages } from "~/models/image.server";

// GET /v1/runtimes/{name}/images: the images built (or building) for one runtime.
const route = v1({
  GET: async (args) => {
    await requireActor(args.request);
    refuseQuery(args.request);
    return { images: await listRuntimeImages(param(args, "name")) };
  },
});

export const loader = route.loader, action = route.action;
