import { requireActor } from "~/edge/auth.server";
import { param, parseQuery, v1 } from "~/edge/route.server";
import { refuseUnsettled } from "~/models/box.server";
import { noteBrowserRestartsOf } from "~/models/browser-restarts.server";
import { readTrace, traceBox } from "~/models/trace.server";
import { TraceQuerySchema } from "~/protocol/api-box";

const route = v1({
  GET: async (args) => {
    const actor = await requireActor(args.request);
    const q = parseQuery(args.request, TraceQuerySchema);
    // A removed box's trace stays readable, so this does not go through getBox (410).
    const box = await traceBox(actor, param(args, "id"));
    // A starting box answers 409 as every call does; a failed one's trace says why it failed.
    await refuseUnsettled(box.id, { failedOk: true });
    // A browser that quit and was started again is read from the box's log (browser-restarts.server.ts).
    if (!box.removed) await noteBrowserRestartsOf(box.id);
    return readTrace(box.id, { after: q.after, limit: q.limit });
  },
});

export const loader = route.loader, action = route.action;
