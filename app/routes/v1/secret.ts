import { requireActor } from "~/edge/auth.server";
import { parseQuietBody } from "~/edge/browser-route.server";
import { param, refuseBody, v1 } from "~/edge/route.server";
import { ownerOf } from "~/models/actor";
import { checkName } from "~/models/sealed-store.server";
import { deleteSecret, putSecret } from "~/models/secret-store.server";
import { SecretPutSchema } from "~/protocol/api-box";

// PUT / DELETE /v1/secrets/{name} (a holm addition, for 004's secret_ref). Write-only: the
// answer never has the value. Changing needs the member role (requireActor's default for
// anything but GET), so a viewer can neither set nor delete.

const route = v1({
  PUT: async (args) => {
    const actor = await requireActor(args.request);
    const name = checkName("secret", param(args, "name"));
    const body = await parseQuietBody(args.request, SecretPutSchema);
    return putSecret(ownerOf(actor), name, body.value);
  },
  DELETE: async (args) => {
    const actor = await requireActor(args.request);
    await refuseBody(args.request);
    return deleteSecret(ownerOf(actor), param(args, "name"));
  },
});

export const loader = route.loader, action = route.action;
