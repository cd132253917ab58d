import { requireActor } from "~/edge/auth.server";
import { refuseQuery, v1 } from "~/edge/route.server";
import { ownerOf } from "~/models/actor";
import { listSecrets } from "~/models/secret-store.server";

// GET /v1/secrets (a holm addition, for 004's secret_ref): the caller's workspace's secret
// names and dates, never values.
const route = v1({
  GET: async (args) => {
    const actor = await requireActor(args.request);
    refuseQuery(args.request);
    return { secrets: await listSecrets(ownerOf(actor)) };
  },
});

export const loader = route.loader, action = route.action;
