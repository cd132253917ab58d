import { requireScheduler } from "~/edge/auth.server";
import { refuseBody, refuseQuery, v1 } from "~/edge/route.server";
import { reapBoxes } from "~/models/box-sync.server";
import { noteAllBrowserRestarts } from "~/models/browser-restarts.server";

const reap = async ({ request }: { request: Request }) => {
  await requireScheduler(request);
  refuseQuery(request);
  await refuseBody(request);
  const reaped = await reapBoxes();
  // Not in the answer (000 says {removed}): a screen's browser restarts into its box's trace.
  await noteAllBrowserRestarts();
  return reaped;
};

const route = v1({ GET: reap, POST: reap });

export const loader = route.loader, action = route.action;
