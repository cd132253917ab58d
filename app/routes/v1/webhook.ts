import { requireActor } from "~/edge/auth.server";
import { parseQuietBody } from "~/edge/browser-route.server";
import { param, refuseBody, refuseQuery, v1 } from "~/edge/route.server";
import { ownerOf } from "~/models/actor";
import { deleteWebhook, getWebhook, updateWebhook } from "~/models/webhook.server";
import { WebhookPatchSchema } from "~/protocol/api-webhook";

// GET / PATCH / DELETE /v1/webhooks/{id} (holm's; docs/decisions/0018). The member role; another
// workspace's webhook is 404, found before the body is read (as a box route finds its box).

const route = v1({
  GET: async (args) => {
    const actor = await requireActor(args.request, "member");
    refuseQuery(args.request);
    return getWebhook(ownerOf(actor), param(args, "id"));
  },
  PATCH: async (args) => {
    const actor = await requireActor(args.request, "member");
    const id = param(args, "id");
    await getWebhook(ownerOf(actor), id);
    const body = await parseQuietBody(args.request, WebhookPatchSchema);
    return updateWebhook(ownerOf(actor), id, body);
  },
  DELETE: async (args) => {
    const actor = await requireActor(args.request, "member");
    await refuseBody(args.request);
    return deleteWebhook(ownerOf(actor), param(args, "id"));
  },
});

export const loader = route.loader, action = route.action;
