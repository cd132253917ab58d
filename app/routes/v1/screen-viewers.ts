import { requireActor } from "~/edge/auth.server";
import { param, v1 } from "~/edge/route.server";
import { getSettledBox } from "~/models/box.server";
import { parseScreen } from "~/models/screen.server";
import { takeoverOf } from "~/models/takeover.server";
import { allViewers } from "~/models/viewer.server";

// Who is on a screen through the viewer socket: `watching` counts every connection (drivers
// watch too), `driving` those in control mode.
const route = v1({
  GET: async (args) => {
    const box = await getSettledBox(await requireActor(args.request), param(args, "id"));
    const screen = parseScreen(param(args, "screen"), box);
    // Every server's viewers (docs/decisions/0021).
    const { watching, driving } = await allViewers(box.id, screen);
    const t = takeoverOf(box.id, screen);
    return {
      watching,
      driving,
      person_driving: driving > 0,
      taken_over: t?.exclusive ?? false,
      ...(t ? { takeover: { by: t.by, exclusive: t.exclusive, since_ms: t.since_ms } } : {}),
    };
  },
});

export const loader = route.loader, action = route.action;
