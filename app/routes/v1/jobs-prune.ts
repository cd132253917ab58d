import { requireScheduler } from "~/edge/auth.server";
import { refuseBody, refuseQuery, v1 } from "~/edge/route.server";
import { prune } from "~/models/job.server";

// Old frames, then old trace entries, then the traces of boxes removed long ago (defaults in
// app/models/trace.server.ts: 7 days, 30 days, 30 days), and events older than 7 days. Answers
// the seed's {frames, entries, boxes}; removed events are not counted in it.
const run = async ({ request }: { request: Request }) => {
  await requireScheduler(request);
  refuseQuery(request);
  await refuseBody(request);
  const { traces } = await prune();
  return { frames: traces.frames, entries: traces.entries, boxes: traces.boxes };
};

const route = v1({ GET: run, POST: run });

export const loader = route.loader, action = route.action;
