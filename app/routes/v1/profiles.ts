import { requireActor } from "~/edge/auth.server";
import { refuseQuery, v1 } from "~/edge/route.server";
import { ownerOf } from "~/models/actor";
import { listProfiles } from "~/models/profile.server";

// GET /v1/profiles (holm's, beside seed 000's `placement.profile`): the caller's workspace's browser
// profiles, with the box holding each now (null when free).
const route = v1({
  GET: async (args) => {
    const actor = await requireActor(args.request);
    refuseQuery(args.request);
    return { profiles: await listProfiles(ownerOf(actor)) };
  },
});

export const loader = route.loader, action = route.action;
