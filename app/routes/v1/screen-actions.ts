import { z } from "zod";
import { requireActor } from "~/edge/auth.server";
import { withIdempotency } from "~/edge/idempotency.server";
import { param, parseJsonText, readText, v1 } from "~/edge/route.server";
import { type BatchTimings, runBatch, validateBatch } from "~/models/batch.server";
import { requireScreen } from "~/models/screen.server";

/** The body's JSON, any shape: validateBatch checks it (made once, not per request). */
const AnyJsonSchema = z.unknown();

const route = v1({
  POST: async (args) => {
    const actor = await requireActor(args.request);
    const text = await readText(args.request);
    const t = await requireScreen(actor, param(args, "id"), param(args, "screen"), args.request.signal);
    const { input, steps } = validateBatch(parseJsonText(text, AnyJsonSchema));
    const scope = `actions:${actor.kind === "server" ? "server" : actor.workspaceId}:${t.box.id}:${t.screen}`;
    return withIdempotency(scope, args.request.headers.get("idempotency-key"), text, async () => {
      const timings: BatchTimings = { box: 0, trace: 0 };
      const body = await runBatch(actor, t, input, steps, timings);
      // How long the box took and what recording cost: agents and the bench read this.
      const headers = { "server-timing": `box;dur=${timings.box.toFixed(2)}, trace;dur=${timings.trace.toFixed(2)}` };
      return { status: 200, body, headers };
    });
  },
});

export const loader = route.loader, action = route.action;
