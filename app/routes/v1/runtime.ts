import { requireActor } from "~/edge/auth.server";
import { parseQuietBody } from "~/edge/browser-route.server";
import { param, refuseBody, refuseQuery, v1 } from "~/edge/route.server";
import { RuntimePatchSchema, deleteRuntime, getRuntime, patchRuntime, requireRuntimeAdmin } from "~/models/runtime-store.server";

// GET /v1/runtimes/{name} (with `can`), PATCH (fields and secrets), DELETE. Changes need the
// server token or the server's administrator, and are refused while a box uses the runtime.
const route = v1({
  GET: async (args) => {
    await requireActor(args.request);
    refuseQuery(args.request);
    return getRuntime(param(args, "name"));
  },
  PATCH: async (args) => {
    const actor = await requireActor(args.request);
    const body = await parseQuietBody(args.request, RuntimePatchSchema);
    await requireRuntimeAdmin(actor);
    return patchRuntime(param(args, "name"), body);
  },
  DELETE: async (args) => {
    const actor = await requireActor(args.request);
    await requireRuntimeAdmin(actor);
    await refuseBody(args.request);
    return deleteRuntime(param(args, "name"));
  },
});

export const loader = route.loader, action = route.action;
