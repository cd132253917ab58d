import { requireActor } from "~/edge/auth.server";
import { refuseQuery, v1 } from "~/edge/route.server";
import { ownerOf } from "~/models/actor";
import { listStates } from "~/models/browser-state.server";

// GET /v1/states (seed: Browser state): the caller's workspace's saved names, with size and dates.
const route = v1({
  GET: async (args) => {
    const actor = await requireActor(args.request);
    refuseQuery(args.request);
    return { states: await listStates(ownerOf(actor)) };
  },
});

export const loader = route.loader, action = route.action;
