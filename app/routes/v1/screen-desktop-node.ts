import { requireActor } from "~/edge/auth.server";
import { param, parseBody, v1 } from "~/edge/route.server";
import { runBatch, validateBatch } from "~/models/batch.server";
import { requireScreen } from "~/models/screen.server";
import { WidgetOpSchema } from "~/protocol/page-actions";
import type { ErrorCode } from "~/protocol/errors";
import { ApiError } from "~/utils/api-error.server";

// POST /v1/boxes/{id}/screens/{screen}/desktop/node: one native widget operation (seed 000,
// "Native widgets"). It runs as a one-step batch (`on_node`), so it is what that step is: traced,
// refused while a person holds the screen when it acts (focus, invoke, set), forked by replay.

const route = v1({
  POST: async (args) => {
    const actor = await requireActor(args.request);
    // The box first: another workspace's box is 404 whatever the body says.
    const t = await requireScreen(actor, param(args, "id"), param(args, "screen"), args.request.signal);
    const op = await parseBody(args.request, WidgetOpSchema);
    const { input, steps } = validateBatch({ actions: [{ type: "on_node", what: op }] });
    const out = await runBatch(actor, t, input, steps);
    const { ok, code, message, ...data } = (out.results[0] ?? {}) as { ok?: boolean; code?: ErrorCode; message?: string };
    if (!ok) throw new ApiError(code ?? "failed", message ?? "the widget operation did not run");
    return data;
  },
});

export const loader = route.loader, action = route.action;
