import { type RecordState, agentCall } from "~/protocol/agent";
import { log } from "~/utils/log.server";
import type { Actor } from "./actor";
import { loadRow } from "./box-record.server";
import type { RunningBox } from "./box.server";
import { noteRecordingStarted, noteRecordingStopped } from "./recording.server";
import { callAgent } from "./screen.server";
import { type Takeover, keyOf, setHeldRecording } from "./takeover-store.server";

// Recording whenever a person holds the screen (issue 18): a box whose `record_takeovers` is set
// (PATCH /v1/boxes/{id}, the box page) records a screen from the moment it is taken over until it
// is given back, at TAKEOVER_FPS. The recording is an ordinary one: marked in the trace at its
// start (`why: "takeover"`) and stop, copied into the store, played on the trace page. The
// takeover's row keeps the recording's path, so whichever server ends the takeover stops that
// recording, and a recording someone had already started is left alone. A recording that cannot
// start (no `video` feature since, ffmpeg missing) is logged; the takeover goes on without it.

export const TAKEOVER_FPS = 10;

/** Starts still under way, per screen: ending the takeover waits for its start. */
const starting = new Map<string, Promise<string | undefined>>();

/** Whether `t`'s recording is still being started here. */
export const recordingStarts = (t: Takeover): boolean => starting.has(keyOf(t.boxId, t.screen));

/** After a takeover began: starts its recording if the box asks for one. Never throws. */
export function startTakeoverRecording(box: RunningBox, t: Takeover, by: Actor): Promise<string | undefined> {
  const k = keyOf(t.boxId, t.screen);
  const p: Promise<string | undefined> = (async () => {
    const row = await loadRow(box.id);
    if (!row || Number(row.record_takeovers) !== 1) return undefined;
    const now = await callAgent<RecordState>(box, agentCall("recordingStatus", { n: t.screen }));
    // Someone (the agent, a person through /v1) is recording already: theirs to stop.
    if (now.recording) return undefined;
    const state = await callAgent<RecordState>(box, agentCall("recordingStart", { n: t.screen }), { fps: TAKEOVER_FPS });
    if (!state.path) return undefined;
    await setHeldRecording(t, state.path);
    await noteRecordingStarted(box, t.screen, state, by, "takeover");
    return state.path;
  })()
    .catch((err) => {
      log.error({ err, box: t.boxId, screen: t.screen }, "starting the takeover's recording failed");
      return undefined;
    })
    .finally(() => {
      if (starting.get(k) === p) starting.delete(k);
    });
  starting.set(k, p);
  return p;
}

/** After a takeover ended: stops the recording it started, if that one still runs. Never throws. */
export async function stopTakeoverRecording(box: RunningBox | undefined, t: Takeover, by: Actor): Promise<void> {
  // A start still under way here is this takeover's (a new one cannot begin before this one ended).
  const path = (await starting.get(keyOf(t.boxId, t.screen))) ?? t.recording;
  if (!path || !box) return;
  try {
    const now = await callAgent<RecordState>(box, agentCall("recordingStatus", { n: t.screen }));
    if (!now.recording || now.path !== path) return;
    const stopped = await callAgent<RecordState>(box, agentCall("recordingStop", { n: t.screen }), undefined, 15_000);
    await noteRecordingStopped(box, t.screen, stopped, by);
  } catch (err) {
    log.error({ err, box: t.boxId, screen: t.screen }, "stopping the takeover's recording failed");
  }
}
