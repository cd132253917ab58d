import { z } from "zod";
import { requireActor } from "~/edge/auth.server";
import { parseQuery, v1 } from "~/edge/route.server";
import { ownerOf } from "~/models/actor";
import { listEvents } from "~/models/event.server";

const EventsQuerySchema = z.strictObject({
  after: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(1000).default(200),
});

const route = v1({
  GET: async ({ request }) => {
    const actor = await requireActor(request);
    const q = parseQuery(request, EventsQuerySchema);
    return listEvents({ owner: ownerOf(actor), after: q.after, limit: q.limit });
  },
});

export const loader = route.loader, action = route.action;
