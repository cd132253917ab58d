import { validateBatch, runBatch } from "~/models/batch.server";
import { withIdempotency } from "~/models/idempotency.server";
import { requireScreen } from "~/models/screen.server";
import { requireActor } from "~/utils/auth.server";
import { param, parseJsonText, v1 } from "~/utils/route.server";
import { z } from "zod";

const route = v1({
  POST: async (args) => {
    const actor = await requireActor(args.request);
    const text = await args.request.text();
    const t = await requireScreen(actor, param(args, "id"), param(args, "screen"), args.request.signal);
    const { input, steps } = validateBatch(parseJsonText(text, z.unknown()));
    const scope = `actions:${actor.kind === "server" ? "server" : actor.workspaceId}:${t.box.id}:${t.screen}`;
    return withIdempotency(scope, args.request.headers.get("idempotency-key"), text, async () => ({
      status: 200,
      body: await runBatch(t, input, steps),
    }));
  },
});

export const loader = route.loader;
export const action = route.action;
// Read by the auth-matrix test: the methods this route serves.
export const handle = { methods: ["POST"] };
