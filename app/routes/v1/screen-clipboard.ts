import { requireActor } from "~/edge/auth.server";
import { param, parseBody, parseQuery, v1 } from "~/edge/route.server";
import { recordClipboardSet } from "~/models/recorder.server";
import { callAgent, requireScreen } from "~/models/screen.server";
import { assertMayDrive } from "~/models/takeover.server";
import { agentCall } from "~/protocol/agent";
import { ClipboardQuerySchema, ClipboardSetSchema } from "~/protocol/api-box";

const route = v1({
  GET: async (args) => {
    const actor = await requireActor(args.request);
    const t = await requireScreen(actor, param(args, "id"), param(args, "screen"));
    const q = parseQuery(args.request, ClipboardQuerySchema);
    return callAgent(t.box, agentCall("clipboardRead", { n: t.screen }, q), undefined, 60_000, "bulk");
  },
  PUT: async (args) => {
    const actor = await requireActor(args.request);
    const t = await requireScreen(actor, param(args, "id"), param(args, "screen"));
    const body = await parseBody(args.request, ClipboardSetSchema);
    assertMayDrive(actor, t.box.id, t.screen, "setting the clipboard");
    const out = await callAgent(t.box, agentCall("clipboardWrite", { n: t.screen }), body);
    await recordClipboardSet(actor, t.box.id, t.screen, body.selection ?? "clipboard", body.text.length);
    return out;
  },
});

export const loader = route.loader, action = route.action;
