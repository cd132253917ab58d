import { requireActor } from "~/edge/auth.server";
import { parseQuery, v1 } from "~/edge/route.server";
import { ownerOf } from "~/models/actor";
import { listEvents } from "~/models/event.server";
import { EventsQuerySchema } from "~/protocol/api-box";

const route = v1({
  GET: async ({ request }) => {
    const actor = await requireActor(request);
    const q = parseQuery(request, EventsQuerySchema);
    return listEvents({ owner: ownerOf(actor), after: q.after, limit: q.limit });
  },
});

export const loader = route.loader, action = route.action;
