import { runningBoxOf } from "~/edge/box-route.server";
import { tabPageOf } from "~/edge/page-route.server";
import { parseQuery, v1 } from "~/edge/route.server";
import { readPage } from "~/models/page-content.server";
import { ReadQuerySchema } from "~/protocol/api-page";
import { jsonResponse } from "~/utils/http-bodies.server";

// GET /v1/boxes/{id}/page: reads the page. Query: format (markdown, text, raw), limit (characters
// of content), max_links, tab. A read is not input: it answers during a takeover too.
// A markdown read says in Server-Timing whether it converted the page or kept the text of the last
// read (`markdown;desc=converted|kept`): an unchanged page is not converted again.

const route = v1({
  GET: async (args) => {
    const { actor, box } = await runningBoxOf(args);
    const { tab, ...q } = parseQuery(args.request, ReadQuerySchema);
    const { tp } = await tabPageOf(actor, box, tab);
    const how: NonNullable<Parameters<typeof readPage>[2]> = {};
    const body = await readPage(tp, q, how);
    return jsonResponse(body, how.markdown ? { headers: { "server-timing": `markdown;desc=${how.markdown}` } } : undefined);
  },
});

export const loader = route.loader, action = route.action;
