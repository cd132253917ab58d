import { reapBoxes } from "~/models/box.server";
import { requireScheduler } from "~/utils/auth.server";
import { v1 } from "~/utils/route.server";

const reap = async ({ request }: { request: Request }) => {
  await requireScheduler(request);
  return reapBoxes();
};

const route = v1({ GET: reap, POST: reap });

export const loader = route.loader;
export const action = route.action;
// Read by the auth-matrix test: the methods this route serves.
export const handle = { methods: ["GET", "POST"] };
