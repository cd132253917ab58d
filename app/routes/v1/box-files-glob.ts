import { z } from "zod";
import { requireActor } from "~/edge/auth.server";
import { param, parseQuery, v1 } from "~/edge/route.server";
import { requireRunningBox } from "~/models/box.server";
import { callAgent } from "~/models/screen.server";
import { agentCall } from "~/protocol/agent";

const GlobQuerySchema = z.strictObject({
  pattern: z.string().min(1).max(1000),
  path: z.string().min(1).max(4096).optional(),
  limit: z.coerce.number().int().min(1).max(10_000).optional(),
});

const route = v1({
  GET: async (args) => {
    const actor = await requireActor(args.request);
    const box = await requireRunningBox(actor, param(args, "id"), args.request.signal);
    const q = parseQuery(args.request, GlobQuerySchema);
    return callAgent(box, agentCall("fileGlob", {}, q), undefined, 120_000, "bulk");
  },
});

export const loader = route.loader, action = route.action;
