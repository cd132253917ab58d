import { requireActor } from "~/edge/auth.server";
import { parseQuietBody } from "~/edge/browser-route.server";
import { param, v1 } from "~/edge/route.server";
import { ownerOf } from "~/models/actor";
import { getWebhook, rotateWebhookSecret } from "~/models/webhook.server";
import { WebhookRotateSchema } from "~/protocol/api-webhook";

// POST /v1/webhooks/{id}/secret (holm's; docs/decisions/0018): rotate the signing secret. The
// answer is the webhook with its new `secret`, the only time that secret is given; the previous
// one is never answered again, and signs beside the new one for `grace_secs` (default 24 h).
// The member role, as every webhook route; another workspace's webhook is 404 before the body.

const route = v1({
  POST: async (args) => {
    const actor = await requireActor(args.request, "member");
    const id = param(args, "id");
    await getWebhook(ownerOf(actor), id);
    const body = await parseQuietBody(args.request, WebhookRotateSchema);
    return rotateWebhookSecret(ownerOf(actor), id, body.grace_secs);
  },
});

export const loader = route.loader, action = route.action;
