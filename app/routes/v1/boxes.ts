import { requireActor } from "~/edge/auth.server";
import { withIdempotency } from "~/edge/idempotency.server";
import { parseJsonText, readText, refuseQuery, v1 } from "~/edge/route.server";
import { createBox, listBoxes } from "~/models/box.server";
import { CreateBoxSchema } from "~/models/spec.server";
import { env } from "~/utils/env.server";

const route = v1({
  GET: async ({ request }) => {
    const actor = await requireActor(request);
    refuseQuery(request);
    return { boxes: await listBoxes(actor) };
  },
  POST: async ({ request }) => {
    const actor = await requireActor(request);
    const text = await readText(request);
    const input = parseJsonText(text, CreateBoxSchema);
    const scope = `boxes:${actor.kind === "server" ? "server" : actor.workspaceId}`;
    return withIdempotency(scope, request.headers.get("idempotency-key"), text, async () => {
      const { box, queued } = await createBox(actor, input, { queue: env().HOLM_SERVER_JOBS === "queue" });
      // The seed: queued, "POST /v1/boxes answers 202 with a box in the starting state".
      return { status: queued ? 202 : 200, body: box };
    });
  },
});

export const loader = route.loader, action = route.action;
