import { tabOfRoute } from "~/edge/page-route.server";
import { v1 } from "~/edge/route.server";
import { recordingPageAct } from "~/models/recorder.server";
import { callAgent } from "~/models/screen.server";
import { agentCall } from "~/protocol/agent";

// DELETE /v1/boxes/{id}/pages/{tab}: closes the tab (by id or label) on the screen that has it.
// Closing a tab is input to that screen: refused during someone else's exclusive takeover.
const route = v1({
  DELETE: async (args) => {
    const { actor, t, tab } = await tabOfRoute(args, "closing a tab");
    const out = await recordingPageAct(actor, t.box, t.screen, { type: "on_tab", tab, close: true }, tab, () => callAgent(t.box, agentCall("tabClose", { n: t.screen, tab })));
    return { screen: t.screen, ...out };
  },
});

export const loader = route.loader, action = route.action;
