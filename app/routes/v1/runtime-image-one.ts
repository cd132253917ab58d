import { requireActor } from "~/edge/auth.server";
import { param, refuseBody, refuseQuery, v1 } from "~/edge/route.server";
import { deleteImage, getImage } from "~/models/image.server";
import { requireRuntimeAdmin } from "~/models/runtime-store.server";

// GET /v1/runtimes/{name}/images/{digest}: one image (`building` with progress, `failed` with
// `reason`, or built). DELETE: remove it, refused while a box uses it; images are shared by every
// workspace, so only the server token or the server's administrator removes one.
const route = v1({
  GET: async (args) => {
    await requireActor(args.request);
    refuseQuery(args.request);
    return getImage(param(args, "name"), param(args, "digest"));
  },
  DELETE: async (args) => {
    const actor = await requireActor(args.request);
    await requireRuntimeAdmin(actor);
    await refuseBody(args.request);
    return deleteImage(actor, param(args, "name"), param(args, "digest"));
  },
});

export const loader = route.loader, action = route.action;
