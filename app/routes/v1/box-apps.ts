import { z } from "zod";
import { requireActor } from "~/edge/auth.server";
import { param, parseBody, v1 } from "~/edge/route.server";
import { installApps } from "~/models/batch.server";
import { requireRunningBox } from "~/models/box.server";
import { assertMayWriteBox } from "~/models/takeover.server";

const AppsSchema = z.strictObject({ apps: z.array(z.string().min(1).max(64)).min(1).max(20) });

const route = v1({
  POST: async (args) => {
    const actor = await requireActor(args.request);
    const box = await requireRunningBox(actor, param(args, "id"), args.request.signal);
    const body = await parseBody(args.request, AppsSchema);
    assertMayWriteBox(actor, box.id, "installing apps");
    return installApps(box, body.apps);
  },
});

export const loader = route.loader, action = route.action;
