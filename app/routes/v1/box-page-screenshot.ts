import { runningBoxOf } from "~/edge/box-route.server";
import { tabPageOf } from "~/edge/page-route.server";
import { parseBody, v1 } from "~/edge/route.server";
import { pageShot } from "~/models/page-content.server";
import { ShotBodySchema } from "~/protocol/api-page";

// POST /v1/boxes/{id}/page/screenshot: captures the page. Body: the `page_shot` step's `what`
// ({full, format, quality, annotate, tab}). A capture is not input: it answers during a takeover.

const route = v1({
  POST: async (args) => {
    const { actor, box } = await runningBoxOf(args);
    const { tab, ...q } = await parseBody(args.request, ShotBodySchema);
    const { tp } = await tabPageOf(actor, box, tab);
    return pageShot(tp, q);
  },
});

export const loader = route.loader, action = route.action;
