import { browserRoute } from "~/edge/browser-route.server";
import { v1 } from "~/edge/route.server";
import { ownerOf } from "~/models/actor";
import { contextOf } from "~/models/browser-cookies.server";
import { LoadSchema, loadState, stateToLoad } from "~/models/browser-state.server";

// POST /v1/boxes/{id}/state/load (seed: Browser state): `{name}` (this workspace's saved state)
// or `{session_json}`. It changes what the box's pages see, so it is agent input: refused while
// a person holds the screen.
const route = v1({
  POST: async (args) => {
    const { actor, t, body } = await browserRoute(args, { body: LoadSchema, doing: "loading browser state" });
    return loadState(t, await contextOf(t), await stateToLoad(ownerOf(actor), body));
  },
});

export const loader = route.loader, action = route.action;
