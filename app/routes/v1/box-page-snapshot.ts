import { z } from "zod";
import { runningBoxOf } from "~/edge/box-route.server";
import { parseQuery, v1 } from "~/edge/route.server";
import { pageOf, screenOfTab } from "~/models/page-browser.server";
import { snapshot } from "~/models/page-element.server";
import { Limit, Ms30, Query, TabRef } from "~/protocol/action-fields";

// GET /v1/boxes/{id}/page/snapshot: the tab's controls with refs. A read: it acts on nothing,
// so a person's takeover does not refuse it.
const SnapshotQuerySchema = z.strictObject({
  scope: Query.optional(),
  limit: z.coerce.number().pipe(Limit).optional(),
  // true (since the last snapshot), false, or the rev of an earlier one.
  delta: z.string().min(1).max(200).optional(),
  quiet_ms: z.coerce.number().pipe(Ms30).optional(),
  tab: TabRef.optional(),
});

const route = v1({
  GET: async (args) => {
    const { box } = await runningBoxOf(args);
    const q = parseQuery(args.request, SnapshotQuerySchema);
    const tp = await pageOf(await screenOfTab(box, q.tab), q.tab);
    return snapshot(tp, q);
  },
});

export const loader = route.loader, action = route.action;
