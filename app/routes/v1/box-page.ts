import { z } from "zod";
import { runningBoxOf } from "~/edge/box-route.server";
import { tabPageOf } from "~/edge/page-route.server";
import { parseQuery, v1 } from "~/edge/route.server";
import { readPage } from "~/models/page-content.server";
import { TabRef } from "~/protocol/action-fields";

// GET /v1/boxes/{id}/page: reads the page. Query: format (markdown, text, raw), limit (characters
// of content), max_links, tab. A read is not input: it answers during a takeover too.
const ReadQuerySchema = z.strictObject({
  format: z.enum(["markdown", "text", "raw"]).optional(),
  limit: z.coerce.number().int().min(1).max(10_000_000).optional(),
  max_links: z.coerce.number().int().min(0).max(10_000).optional(),
  tab: TabRef.optional(),
});

const route = v1({
  GET: async (args) => {
    const { actor, box } = await runningBoxOf(args);
    const { tab, ...q } = parseQuery(args.request, ReadQuerySchema);
    const { tp } = await tabPageOf(actor, box, tab);
    return readPage(tp, q);
  },
});

export const loader = route.loader, action = route.action;
