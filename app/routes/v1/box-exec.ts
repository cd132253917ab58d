import { boxWrite } from "~/edge/box-route.server";
import { v1 } from "~/edge/route.server";
import { ExecSchema } from "~/models/action-schema.server";
import { recordRan } from "~/models/recorder.server";
import { callAgent } from "~/models/screen.server";
import { DEFAULT_EXEC_MS } from "~/protocol/action-fields";
import { agentCall } from "~/protocol/agent";

const route = v1({
  POST: async (args) => {
    const { actor, box, body } = await boxWrite(args, ExecSchema, "exec");
    const out = await callAgent<Record<string, unknown>>(box, agentCall("exec", {}), body, (body.timeout_ms ?? DEFAULT_EXEC_MS) + 15_000, "bulk");
    await recordRan(actor, box.id, body.argv, out);
    return out;
  },
});

export const loader = route.loader, action = route.action;
