import { requireActor } from "~/edge/auth.server";
import { parseQuietBody } from "~/edge/browser-route.server";
import { param, v1 } from "~/edge/route.server";
import { ownerOf } from "~/models/actor";
import { replayDelivery } from "~/models/webhook-delivery.server";
import { getWebhook } from "~/models/webhook.server";
import { ReplayBodySchema } from "~/protocol/api-webhook";

// POST /v1/webhooks/{id}/deliveries/{delivery}/replay (holm's; docs/decisions/0018): a new
// delivery of the same event, due now; the answer is that delivery (`replay_of` names the old).

const route = v1({
  POST: async (args) => {
    const actor = await requireActor(args.request, "member");
    const id = param(args, "id");
    await getWebhook(ownerOf(actor), id);
    await parseQuietBody(args.request, ReplayBodySchema);
    return replayDelivery(ownerOf(actor), id, param(args, "delivery"));
  },
});

export const loader = route.loader, action = route.action;
