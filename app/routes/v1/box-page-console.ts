import { runningBoxOf } from "~/edge/box-route.server";
import { tabPageOf } from "~/edge/page-route.server";
import { parseBody, parseQuery, v1 } from "~/edge/route.server";
import { readConsole } from "~/models/page-content.server";
import { ConsoleBodySchema, TabQuerySchema } from "~/protocol/api-page";

// POST /v1/boxes/{id}/page/console?tab=…: reads the tab's console. Body: {errors, clear, limit}.
// Not input (clearing empties the server's copy, not the page), so it answers during a takeover.

const route = v1({
  POST: async (args) => {
    const { actor, box } = await runningBoxOf(args);
    const { tab } = parseQuery(args.request, TabQuerySchema);
    const body = await parseBody(args.request, ConsoleBodySchema);
    const { tp } = await tabPageOf(actor, box, tab);
    return readConsole(tp, body);
  },
});

export const loader = route.loader, action = route.action;
