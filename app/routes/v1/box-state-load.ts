import { z } from "zod";
import { runningBoxOf } from "~/edge/box-route.server";
import { parseQuietBody } from "~/edge/quiet-body.server";
import { parseQuery, v1 } from "~/edge/route.server";
import { ownerOf } from "~/models/actor";
import { TabQuery, contextOf } from "~/models/browser-cookies.server";
import { LoadSchema, loadState, stateToLoad } from "~/models/browser-state.server";
import { screenOfTab } from "~/models/page-browser.server";
import { assertMayDrive } from "~/models/takeover.server";

// POST /v1/boxes/{id}/state/load (seed: Browser state): `{name}` (this workspace's saved state)
// or `{session_json}`. It changes what the box's pages see, so it is agent input: refused while
// a person holds the screen. The body carries cookie values: a bad one is refused without
// quoting it.
const route = v1({
  POST: async (args) => {
    const { actor, box } = await runningBoxOf(args);
    const q = parseQuery(args.request, z.strictObject(TabQuery));
    const body = await parseQuietBody(args.request, LoadSchema);
    const t = await screenOfTab(box, q.tab);
    assertMayDrive(actor, box.id, t.screen, "loading browser state");
    const state = await stateToLoad(ownerOf(actor), body);
    return loadState(await contextOf(t), state);
  },
});

export const loader = route.loader, action = route.action;
