import { browserRoute } from "~/edge/browser-route.server";
import { v1 } from "~/edge/route.server";
import { ownerOf } from "~/models/actor";
import { contextOf } from "~/models/browser-cookies.server";
import { SaveSchema, saveState } from "~/models/browser-state.server";

// POST /v1/boxes/{id}/state/save (seed: Browser state). Reads the browser and changes nothing
// in the box, so a person's takeover does not refuse it.
const route = v1({
  POST: async (args) => {
    const { actor, t, body } = await browserRoute(args, { body: SaveSchema });
    return saveState(ownerOf(actor), await contextOf(t), body);
  },
});

export const loader = route.loader, action = route.action;
