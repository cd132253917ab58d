import { requireActor } from "~/edge/auth.server";
import { withIdempotency } from "~/edge/idempotency.server";
import { param, parseJsonText, readText, v1 } from "~/edge/route.server";
import { ForkSchema, forkBox } from "~/models/fork.server";
import { traceBox } from "~/models/trace.server";
import { env } from "~/utils/env.server";

const route = v1({
  POST: async (args) => {
    const actor = await requireActor(args.request, "member");
    const id = param(args, "id");
    // The source must be visible before the body is read: another workspace learns nothing.
    await traceBox(actor, id);
    const text = await readText(args.request);
    const input = parseJsonText(text, ForkSchema);
    const scope = `fork:${actor.kind === "server" ? "server" : actor.workspaceId}:${id}`;
    return withIdempotency(scope, args.request.headers.get("idempotency-key"), text, async () => {
      const { box, replay, queued } = await forkBox(actor, id, input, { queue: env().HOLM_SERVER_JOBS === "queue" });
      // The seed: queued, the fork "answers 202 in the same way, with an empty replay report".
      return { status: queued ? 202 : 200, body: { box, replay } };
    });
  },
});

export const loader = route.loader, action = route.action;
