import { requireActor } from "~/edge/auth.server";
import { param, refuseBody, v1 } from "~/edge/route.server";
import { ownerOf } from "~/models/actor";
import { deleteProfile } from "~/models/profile.server";

// DELETE /v1/profiles/{name}: the profile and its volume. Refused (409 `denied`) while a box holds
// it; another workspace's name is not there (404).
const route = v1({
  DELETE: async (args) => {
    const actor = await requireActor(args.request);
    await refuseBody(args.request);
    return deleteProfile(ownerOf(actor), param(args, "name"));
  },
});

export const loader = route.loader, action = route.action;
