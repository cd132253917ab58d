import { requireActor } from "~/edge/auth.server";
import { param, v1 } from "~/edge/route.server";
import { frame, requireScreen } from "~/models/screen.server";

const route = v1({
  GET: async (args) => {
    const t = await requireScreen(await requireActor(args.request), param(args, "id"), param(args, "screen"));
    return frame(t, Object.fromEntries(new URL(args.request.url).searchParams));
  },
});

export const loader = route.loader, action = route.action;
