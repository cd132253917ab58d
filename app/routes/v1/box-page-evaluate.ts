import { runningBoxOf } from "~/edge/box-route.server";
import { tabPageOf } from "~/edge/page-route.server";
import { parseBody, parseQuery, v1 } from "~/edge/route.server";
import { evaluate } from "~/models/page-content.server";
import { recordingPageAct } from "~/models/recorder.server";
import { EvaluateBodySchema, TabQuerySchema } from "~/protocol/api-page";

// POST /v1/boxes/{id}/page/evaluate?tab=…: runs JavaScript in the page. Body: the `evaluate`
// step's `what` ({expression, timeout_ms, limit}). Running code in a page is input to it.
const route = v1({
  POST: async (args) => {
    const { actor, box } = await runningBoxOf(args);
    const { tab } = parseQuery(args.request, TabQuerySchema);
    const body = await parseBody(args.request, EvaluateBodySchema);
    const { t, tp } = await tabPageOf(actor, box, tab, "running JavaScript in the page");
    return recordingPageAct(actor, box, t.screen, { type: "evaluate", what: body }, tp.tab.id, () => evaluate(tp, body));
  },
});

export const loader = route.loader, action = route.action;
