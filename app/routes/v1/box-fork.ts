import { refuseUnsettled } from "~/models/box.server";
import { ForkSchema, forkBox } from "~/models/fork.server";
import { withIdempotency } from "~/models/idempotency.server";
import { traceBox } from "~/models/trace.server";
import { requireActor } from "~/utils/auth.server";
import { env } from "~/utils/env.server";
import { param, parseJsonText, readText, v1 } from "~/utils/route.server";

const route = v1({
  POST: async (args) => {
    const actor = await requireActor(args.request, "member");
    const id = param(args, "id");
    // The source must be visible before the body is read: another workspace learns nothing.
    await traceBox(actor, id);
    // A starting or failed source answers 409 (a removed one still forks).
    await refuseUnsettled(id);
    const text = await readText(args.request);
    const input = parseJsonText(text, ForkSchema);
    const scope = `fork:${actor.kind === "server" ? "server" : actor.workspaceId}:${id}`;
    return withIdempotency(scope, args.request.headers.get("idempotency-key"), text, () =>
      forkBox(actor, id, input, { queue: env().HOLM_SERVER_JOBS === "queue" }),
    );
  },
});

export const loader = route.loader, action = route.action;
