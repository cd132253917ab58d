import { requireActor } from "~/edge/auth.server";
import { parseQuietBody } from "~/edge/browser-route.server";
import { refuseQuery, v1 } from "~/edge/route.server";
import { RuntimeCreateSchema, createRuntime, listRuntimes, requireRuntimeAdmin } from "~/models/runtime-store.server";

// GET /v1/runtimes: every runtime, the built-in one first. POST: add one (the server token or
// the server's administrator). The body is read without echoing it: it carries secrets.
const route = v1({
  GET: async ({ request }) => {
    await requireActor(request);
    refuseQuery(request);
    return { runtimes: await listRuntimes() };
  },
  POST: async ({ request }) => {
    const actor = await requireActor(request);
    const body = await parseQuietBody(request, RuntimeCreateSchema);
    await requireRuntimeAdmin(actor);
    return createRuntime(body);
  },
});

export const loader = route.loader, action = route.action;
