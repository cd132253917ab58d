import { requireActor } from "~/edge/auth.server";
import { param, parseBody, refuseBody, refuseQuery, v1 } from "~/edge/route.server";
import { type RecordState, noteRecordingStarted, noteRecordingStopped } from "~/models/recording.server";
import { callAgent, requireScreen } from "~/models/screen.server";
import { agentCall } from "~/protocol/agent";
import { RecordingStartSchema } from "~/protocol/api-box";

async function target(args: Parameters<Parameters<typeof v1>[0]["GET"] & {}>[0]) {
  return requireScreen(await requireActor(args.request), param(args, "id"), param(args, "screen"));
}

const route = v1({
  GET: async (args) => {
    const t = await target(args);
    refuseQuery(args.request);
    return callAgent(t.box, agentCall("recordingStatus", { n: t.screen }));
  },
  POST: async (args) => {
    const actor = await requireActor(args.request);
    const t = await requireScreen(actor, param(args, "id"), param(args, "screen"));
    const body = await parseBody(args.request, RecordingStartSchema);
    const state = await callAgent<RecordState>(t.box, agentCall("recordingStart", { n: t.screen }), body);
    await noteRecordingStarted(t.box, t.screen, state, actor);
    return state;
  },
  DELETE: async (args) => {
    const actor = await requireActor(args.request);
    const t = await requireScreen(actor, param(args, "id"), param(args, "screen"));
    await refuseBody(args.request);
    const state = await callAgent<RecordState>(t.box, agentCall("recordingStop", { n: t.screen }));
    // Answered once the file is in the trace: a reader of the trace after this finds it.
    await noteRecordingStopped(t.box, t.screen, state, actor, true);
    return state;
  },
});

export const loader = route.loader, action = route.action;
