import { requireActor } from "~/edge/auth.server";
import { param, refuseBody, v1 } from "~/edge/route.server";
import { ownerOf } from "~/models/actor";
import { deleteState } from "~/models/browser-state.server";

// DELETE /v1/states/{name} (seed: Browser state). Another workspace's name is not there: 404.
const route = v1({
  DELETE: async (args) => {
    const actor = await requireActor(args.request);
    await refuseBody(args.request);
    return deleteState(ownerOf(actor), param(args, "name"));
  },
});

export const loader = route.loader, action = route.action;
