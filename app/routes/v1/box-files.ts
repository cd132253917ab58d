import { boxWrite, fileQuery } from "~/edge/box-route.server";
import { v1 } from "~/edge/route.server";
import { WriteFileSchema } from "~/models/action-schema.server";
import { recordFileWritten } from "~/models/recorder.server";
import { callAgent } from "~/models/screen.server";
import { agentCall } from "~/protocol/agent";
import { PathQuerySchema } from "~/protocol/api-box";

const route = v1({
  GET: fileQuery("fileRead", PathQuerySchema, 120_000),
  PUT: async (args) => {
    const { actor, box, body } = await boxWrite(args, WriteFileSchema, "writing a file");
    const out = await callAgent(box, agentCall("fileWrite", {}), body, 120_000);
    await recordFileWritten(actor, box.id, body.path, Math.floor((body.contents_base64.length * 3) / 4));
    return out;
  },
});

export const loader = route.loader, action = route.action;
