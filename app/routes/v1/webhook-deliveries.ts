import { requireActor } from "~/edge/auth.server";
import { param, parseQuery, v1 } from "~/edge/route.server";
import { ownerOf } from "~/models/actor";
import { listDeliveries } from "~/models/webhook-delivery.server";
import { getWebhook } from "~/models/webhook.server";
import { DeliveriesQuerySchema } from "~/protocol/api-webhook";

// GET /v1/webhooks/{id}/deliveries (holm's; docs/decisions/0018): the delivery log, newest
// first: status, attempts, the last status code, latency and error, the next attempt's time.

const route = v1({
  GET: async (args) => {
    const actor = await requireActor(args.request, "member");
    const id = param(args, "id");
    await getWebhook(ownerOf(actor), id);
    const query = parseQuery(args.request, DeliveriesQuerySchema);
    return { deliveries: await listDeliveries(ownerOf(actor), id, query.limit) };
  },
});

export const loader = route.loader, action = route.action;
