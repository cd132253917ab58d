import { requireScheduler } from "~/edge/auth.server";
import { refuseBody, refuseQuery, v1 } from "~/edge/route.server";
import { reapBoxes } from "~/models/box-sync.server";

const reap = async ({ request }: { request: Request }) => {
  await requireScheduler(request);
  refuseQuery(request);
  await refuseBody(request);
  return reapBoxes();
};

const route = v1({ GET: reap, POST: reap });

export const loader = route.loader, action = route.action;
