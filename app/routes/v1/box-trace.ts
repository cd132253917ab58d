import { z } from "zod";
import { requireActor } from "~/edge/auth.server";
import { param, parseQuery, v1 } from "~/edge/route.server";
import { refuseUnsettled } from "~/models/box.server";
import { readTrace, TRACE_PAGE_DEFAULT, TRACE_PAGE_MAX, traceBox } from "~/models/trace.server";

const TraceQuerySchema = z.strictObject({
  /** Entries with seq > after; -1 (the default) reads from the start. */
  after: z.coerce.number().int().min(-1).default(-1),
  limit: z.coerce.number().int().min(1).max(TRACE_PAGE_MAX).default(TRACE_PAGE_DEFAULT),
});

const route = v1({
  GET: async (args) => {
    const actor = await requireActor(args.request);
    const q = parseQuery(args.request, TraceQuerySchema);
    // A removed box's trace stays readable, so this does not go through getBox (410).
    const box = await traceBox(actor, param(args, "id"));
    // A starting box answers 409 as every call does; a failed one's trace says why it failed.
    await refuseUnsettled(box.id, { failedOk: true });
    return readTrace(box.id, { after: q.after, limit: q.limit });
  },
});

export const loader = route.loader, action = route.action;
