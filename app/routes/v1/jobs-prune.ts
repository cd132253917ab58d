import { pruneTraces } from "~/models/trace.server";
import { requireScheduler } from "~/utils/auth.server";
import { v1 } from "~/utils/route.server";

// Old frames, then old trace entries, then the traces of boxes removed long ago (defaults in
// app/models/trace.server.ts: 7 days, 30 days, 30 days). Returns {frames, entries, boxes}.
const prune = async ({ request }: { request: Request }) => {
  await requireScheduler(request);
  return pruneTraces({ now: Date.now() });
};

const route = v1({ GET: prune, POST: prune });

export const loader = route.loader, action = route.action;
