import { requireScheduler } from "~/edge/auth.server";
import { refuseBody, refuseQuery, v1 } from "~/edge/route.server";
import { runJobs } from "~/models/job.server";

// "Do the queued launches, forks and builds. It stops taking new jobs after 50 seconds.
// Returns {ran}." (000) Answers when the jobs it took are done. With HOLM_SERVER_SCHEDULE=external
// it also sends the webhook deliveries that are due (nothing else does then); the body stays the
// seed's `{ran}`, and how many deliveries it attempted is the `Holm-Webhook-Deliveries` header.
const run = async ({ request }: { request: Request }) => {
  await requireScheduler(request);
  refuseQuery(request);
  await refuseBody(request);
  const { ran, deliveries } = await runJobs();
  return Response.json({ ran }, { headers: { "holm-webhook-deliveries": String(deliveries) } });
};

const route = v1({ GET: run, POST: run });

export const loader = route.loader, action = route.action;
