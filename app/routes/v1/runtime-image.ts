import { requireActor } from "~/edge/auth.server";
import { param, parseBody, v1 } from "~/edge/route.server";
import { ImageBuildSchema, buildImage } from "~/models/image.server";
import { env } from "~/utils/env.server";

// POST /v1/runtimes/{name}/image: build the image for a spec before a box needs it (member role:
// a launch could build it too, and the same per-workspace build limit applies). Queued jobs:
// 202 with `state: "building"` and an empty `image`.
const route = v1({
  POST: async (args) => {
    const actor = await requireActor(args.request);
    const body = await parseBody(args.request, ImageBuildSchema);
    const { queued, body: out } = await buildImage(actor, param(args, "name"), body, { queue: env().HOLM_SERVER_JOBS === "queue" });
    return queued ? Response.json(out, { status: 202 }) : out;
  },
});

export const loader = route.loader, action = route.action;
