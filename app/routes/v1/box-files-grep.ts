import { requireActor } from "~/edge/auth.server";
import { param, parseBody, v1 } from "~/edge/route.server";
import { GrepSchema } from "~/models/action-schema.server";
import { requireRunningBox } from "~/models/box.server";
import { callAgent } from "~/models/screen.server";
import { agentCall } from "~/protocol/agent";

const route = v1({
  POST: async (args) => {
    const actor = await requireActor(args.request);
    const box = await requireRunningBox(actor, param(args, "id"), args.request.signal);
    const body = await parseBody(args.request, GrepSchema);
    return callAgent(box, agentCall("fileGrep", {}), body, 120_000, "bulk");
  },
});

export const loader = route.loader, action = route.action;
