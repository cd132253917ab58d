import { runningBoxOf } from "~/edge/box-route.server";
import { tabPageOf } from "~/edge/page-route.server";
import { parseQuery, v1 } from "~/edge/route.server";
import { ReadQuerySchema } from "~/edge/v1-schemas.server";
import { readPage } from "~/models/page-content.server";

// GET /v1/boxes/{id}/page: reads the page. Query: format (markdown, text, raw), limit (characters
// of content), max_links, tab. A read is not input: it answers during a takeover too.

const route = v1({
  GET: async (args) => {
    const { actor, box } = await runningBoxOf(args);
    const { tab, ...q } = parseQuery(args.request, ReadQuerySchema);
    const { tp } = await tabPageOf(actor, box, tab);
    return readPage(tp, q);
  },
});

export const loader = route.loader, action = route.action;
