import { z } from "zod";
import { runningBoxOf } from "~/edge/box-route.server";
import { parseBody, parseQuery, v1 } from "~/edge/route.server";
import { ownerOf } from "~/models/actor";
import { TabQuery, contextOf } from "~/models/browser-cookies.server";
import { SaveSchema, saveState } from "~/models/browser-state.server";
import { screenOfTab } from "~/models/page-browser.server";

// POST /v1/boxes/{id}/state/save (seed: Browser state). Reads the browser, changes nothing in
// the box, so a person's takeover does not refuse it. Query `tab` (a holm addition) picks the
// screen whose browser has that tab; screen 0 without it.
const route = v1({
  POST: async (args) => {
    const { actor, box } = await runningBoxOf(args);
    const q = parseQuery(args.request, z.strictObject(TabQuery));
    const body = await parseBody(args.request, SaveSchema);
    const t = await screenOfTab(box, q.tab);
    return saveState(ownerOf(actor), await contextOf(t), body);
  },
});

export const loader = route.loader, action = route.action;
