import { requireActor } from "~/edge/auth.server";
import { parseQuietBody } from "~/edge/browser-route.server";
import { refuseQuery, v1 } from "~/edge/route.server";
import { issuerOf, ownerOf } from "~/models/actor";
import { createWebhook, listWebhooks } from "~/models/webhook.server";
import { WebhookCreateSchema } from "~/protocol/api-webhook";

// GET / POST /v1/webhooks (holm's, issue 16; docs/decisions/0018). Both need the member role, as
// keys do: a webhook's URL may carry a token of the receiver's, so a viewer reads none. The
// create answer is the only one that ever has the secret. The body is read quietly (no JSON
// parser message echoed): it may hold the secret.

const route = v1({
  GET: async (args) => {
    const actor = await requireActor(args.request, "member");
    refuseQuery(args.request);
    return { webhooks: await listWebhooks(ownerOf(actor)) };
  },
  POST: async (args) => {
    const actor = await requireActor(args.request, "member");
    const body = await parseQuietBody(args.request, WebhookCreateSchema);
    return createWebhook(ownerOf(actor), issuerOf(actor), body);
  },
});

export const loader = route.loader, action = route.action;
