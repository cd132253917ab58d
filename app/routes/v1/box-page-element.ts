import { runningBoxOf } from "~/edge/box-route.server";
import { parseBody, parseQuery, v1 } from "~/edge/route.server";
import { pageOf, screenOfTab } from "~/models/page-browser.server";
import { elementOp } from "~/models/page-element.server";
import { recordingPageAct } from "~/models/recorder.server";
import { assertMayDrive } from "~/models/takeover.server";
import { ElementOpSchema } from "~/protocol/page-actions";
import { ElementQuerySchema } from "~/protocol/api-page";

// POST /v1/boxes/{id}/page/element: one element operation (seed 000, "Element operations"). It is
// agent input: refused while a person holds the tab's screen, and recorded in the trace as an
// `acted` entry (an `on_page` step, which a fork replays).

const route = v1({
  POST: async (args) => {
    const { actor, box } = await runningBoxOf(args);
    const q = parseQuery(args.request, ElementQuerySchema);
    const op = await parseBody(args.request, ElementOpSchema);
    const t = await screenOfTab(box, q.tab);
    assertMayDrive(actor, box.id, t.screen, `acting on its page (${op.op})`);
    const tp = await pageOf(t, q.tab);
    return recordingPageAct(actor, box, t.screen, { type: "on_page", what: op }, tp.tab.id, () =>
      elementOp(tp, op, { settle_ms: q.settle_ms, owner: box.owner, box }),
    );
  },
});

export const loader = route.loader, action = route.action;
