import { z } from "zod";
import { requireActor } from "~/edge/auth.server";
import { param, parseBody, parseQuery, v1 } from "~/edge/route.server";
import { WriteFileSchema } from "~/models/action-schema.server";
import { requireRunningBox } from "~/models/box.server";
import { recordFileWritten } from "~/models/recorder.server";
import { callAgent } from "~/models/screen.server";
import { assertMayWriteBox } from "~/models/takeover.server";
import { agentCall } from "~/protocol/agent";

const PathQuerySchema = z.strictObject({ path: z.string().min(1).max(4096) });

const route = v1({
  GET: async (args) => {
    const actor = await requireActor(args.request);
    const box = await requireRunningBox(actor, param(args, "id"), args.request.signal);
    const q = parseQuery(args.request, PathQuerySchema);
    return callAgent(box, agentCall("fileRead", {}, q), undefined, 120_000, "bulk");
  },
  PUT: async (args) => {
    const actor = await requireActor(args.request);
    const box = await requireRunningBox(actor, param(args, "id"), args.request.signal);
    const body = await parseBody(args.request, WriteFileSchema);
    assertMayWriteBox(actor, box.id, "writing a file");
    const out = await callAgent(box, agentCall("fileWrite", {}), body, 120_000);
    await recordFileWritten(box.id, body.path, Math.floor((body.contents_base64.length * 3) / 4));
    return out;
  },
});

export const loader = route.loader, action = route.action;
