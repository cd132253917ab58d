import { runningBoxOf } from "~/edge/box-route.server";
import { parseQuery, v1 } from "~/edge/route.server";
import { SnapshotQuerySchema } from "~/edge/v1-schemas.server";
import { pageOf, screenOfTab } from "~/models/page-browser.server";
import { snapshot } from "~/models/page-element.server";

// GET /v1/boxes/{id}/page/snapshot: the tab's controls with refs. A read: it acts on nothing,
// so a person's takeover does not refuse it.

const route = v1({
  GET: async (args) => {
    const { box } = await runningBoxOf(args);
    const q = parseQuery(args.request, SnapshotQuerySchema);
    const tp = await pageOf(await screenOfTab(box, q.tab), q.tab);
    return snapshot(tp, q);
  },
});

export const loader = route.loader, action = route.action;
