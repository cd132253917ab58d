import { tabOfRoute } from "~/edge/page-route.server";
import { v1 } from "~/edge/route.server";
import { recordingPageAct } from "~/models/recorder.server";
import { callAgent } from "~/models/screen.server";
import { agentCall } from "~/protocol/agent";

// POST /v1/boxes/{id}/pages/{tab}/focus: brings the tab to the front of its screen's Chromium.
const route = v1({
  POST: async (args) => {
    const { actor, t, tab } = await tabOfRoute(args, "bringing a tab to the front");
    const out = await recordingPageAct(actor, t.box, t.screen, { type: "on_tab", tab }, tab, () => callAgent(t.box, agentCall("tabFocus", { n: t.screen, tab })));
    return { screen: t.screen, ...out };
  },
});

export const loader = route.loader, action = route.action;
