import { callAgent, requireScreen } from "~/models/screen.server";
import { assertAgentMayInput } from "~/models/takeover.server";
import { requireActor } from "~/utils/auth.server";
import { param, v1 } from "~/utils/route.server";

const route = v1({
  POST: async (args) => {
    const t = await requireScreen(await requireActor(args.request), param(args, "id"), param(args, "screen"));
    assertAgentMayInput(t.box.id, t.screen);
    return callAgent(t.box, "POST", `/screens/${t.screen}/windows/${encodeURIComponent(param(args, "window"))}/focus`);
  },
});

export const loader = route.loader;
export const action = route.action;
// Read by the auth-matrix test: the methods this route serves.
export const handle = { methods: ["POST"] };
