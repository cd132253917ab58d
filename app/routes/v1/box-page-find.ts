import { z } from "zod";
import { runningBoxOf } from "~/edge/box-route.server";
import { parseQuery, v1 } from "~/edge/route.server";
import { pageOf, screenOfTab } from "~/models/page-browser.server";
import { findElements } from "~/models/page-element.server";
import { Limit, Query, TabRef } from "~/protocol/action-fields";

// GET /v1/boxes/{id}/page/find: the elements a query matches. `scroll` only brings the first
// into view, as reading a page does, so a person's takeover does not refuse it.
const Flag = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");
const FindQuerySchema = z.strictObject({
  q: Query,
  limit: z.coerce.number().pipe(Limit).optional(),
  scroll: Flag.optional(),
  exact: Flag.optional(),
  role: z.string().min(1).max(100).optional(),
  tab: TabRef.optional(),
});

const route = v1({
  GET: async (args) => {
    const { box } = await runningBoxOf(args);
    const { q, tab, ...rest } = parseQuery(args.request, FindQuerySchema);
    const tp = await pageOf(await screenOfTab(box, tab), tab);
    return findElements(tp, { query: q, ...rest });
  },
});

export const loader = route.loader, action = route.action;
