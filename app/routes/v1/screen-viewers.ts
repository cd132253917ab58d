import { requireActor } from "~/edge/auth.server";
import { param, refuseQuery, v1 } from "~/edge/route.server";
import { getSettledBox } from "~/models/box.server";
import { directViewerCounts } from "~/models/direct-viewer-access.server";
import { parseScreen } from "~/models/screen.server";
import { takeoverOf } from "~/models/takeover.server";
import { allViewers } from "~/models/viewer.server";

// Who is on a screen through the viewer socket (and a box's direct sockets): `watching` counts
// every connection (drivers watch too), `driving` those in control mode.
const route = v1({
  GET: async (args) => {
    const box = await getSettledBox(await requireActor(args.request), param(args, "id"));
    refuseQuery(args.request);
    const screen = parseScreen(param(args, "screen"), box);
    // Every server's viewers (docs/decisions/0021).
    const relayed = await allViewers(box.id, screen);
    // A box that serves direct viewer sockets (ADR 0029) counts its own too.
    const direct = box.spec.policy.auth === "none" ? undefined : await directViewerCounts(box.id, screen);
    const t = takeoverOf(box.id, screen);
    return {
      watching: relayed.watching + (direct?.watching ?? 0),
      driving: relayed.driving + (direct?.driving ?? 0),
      person_driving: relayed.driving > 0 || (direct?.people ?? 0) > 0,
      taken_over: t?.exclusive ?? false,
      ...(t ? { takeover: { by: t.by, exclusive: t.exclusive, since_ms: t.since_ms } } : {}),
    };
  },
});

export const loader = route.loader, action = route.action;
