import { requireActor } from "~/edge/auth.server";
import { baseUrlOf } from "~/edge/base-url.server";
import { changeBox } from "~/edge/box-actions.server";
import { param, parseBody, refuseBody, refuseQuery, v1 } from "~/edge/route.server";
import { updateBoxMetadata } from "~/models/box-metadata.server";
import { getBox } from "~/models/box.server";
import { withDevtoolsUrl } from "~/models/cdp-access.server";
import { withForkReplay } from "~/models/fork-progress.server";
import { BoxPatchSchema } from "~/protocol/api-box";
import { ApiError } from "~/utils/api-error.server";

const route = v1({
  GET: async (args) => {
    const actor = await requireActor(args.request);
    refuseQuery(args.request);
    // holm's `replay` on a fork: its replay's progress, for a caller polling a 202 fork.
    return withForkReplay(withDevtoolsUrl(actor, await getBox(actor, param(args, "id")), baseUrlOf(args.request)));
  },
  // holm's: the box's name and labels (member role, as every change).
  PATCH: async (args) => {
    const actor = await requireActor(args.request);
    const id = param(args, "id");
    // The box must be visible before the body is read: another workspace learns nothing.
    await getBox(actor, id);
    return updateBoxMetadata(actor, id, await parseBody(args.request, BoxPatchSchema));
  },
  DELETE: async (args) => {
    const actor = await requireActor(args.request);
    if (args.request.headers.get("x-holm-confirm-delete") !== "true") {
      throw new ApiError("bad_request", "removing a box needs the header x-holm-confirm-delete: true");
    }
    // The box first (another workspace's is 404 whatever the body), then the body.
    await getBox(actor, param(args, "id"));
    await refuseBody(args.request);
    return changeBox(actor, "remove", param(args, "id"));
  },
});

export const loader = route.loader, action = route.action;
