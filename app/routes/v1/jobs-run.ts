import { requireScheduler } from "~/edge/auth.server";
import { v1 } from "~/edge/route.server";
import { runJobs } from "~/models/job.server";

// "Do the queued launches, forks and builds. It stops taking new jobs after 50 seconds.
// Returns {ran}." (000) Answers when the jobs it took are done.
const run = async ({ request }: { request: Request }) => {
  await requireScheduler(request);
  return runJobs();
};

const route = v1({ GET: run, POST: run });

export const loader = route.loader, action = route.action;
