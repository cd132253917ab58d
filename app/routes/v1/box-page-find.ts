import { runningBoxOf } from "~/edge/box-route.server";
import { parseQuery, v1 } from "~/edge/route.server";
import { pageOf, screenOfTab } from "~/models/page-browser.server";
import { findElements } from "~/models/page-element.server";
import { FindQuerySchema } from "~/protocol/api-page";

// GET /v1/boxes/{id}/page/find: the elements a query matches. `scroll` only brings the first
// into view, as reading a page does, so a person's takeover does not refuse it.

const route = v1({
  GET: async (args) => {
    const { box } = await runningBoxOf(args);
    const { q, tab, ...rest } = parseQuery(args.request, FindQuerySchema);
    const tp = await pageOf(await screenOfTab(box, tab), tab);
    return findElements(tp, { query: q, ...rest });
  },
});

export const loader = route.loader, action = route.action;
