import { requireActor } from "~/edge/auth.server";
import { refuseQuery, v1 } from "~/edge/route.server";
import { catalogNames } from "~/models/catalog.server";

const route = v1({
  GET: async ({ request }) => {
    await requireActor(request);
    refuseQuery(request);
    return { apps: catalogNames() };
  },
});

export const loader = route.loader, action = route.action;
