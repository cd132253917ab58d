import { type RecordState, agentCall } from "~/protocol/agent";
import { log } from "~/utils/log.server";
import type { Actor } from "./actor";
import { SERVER_ITSELF, attribution } from "./actor-name.server";
import { type BoxRow, boxAddress, onBeforeRemove } from "./box-record.server";
import type { RunningBox } from "./box.server";
import { storeRecording } from "./recording-store.server";
import { callAgent } from "./screen.server";
import { recordEntry } from "./trace.server";

// Screen recordings in the trace (issue 18). A recording runs in the box (ffmpeg, the `record`
// step or the recording routes); the server marks its start and stop in the trace
// (`recording_started`, `recording_stopped`), and once it stops copies the file out of the box
// into the store, so it plays in the console's trace page at the scrubber's position, downloads
// from `…/trace/recordings/{id}`, outlives the box as the trace does, and goes when the trace is
// pruned. A box removed while recording has its recordings stopped and copied first.

export type { RecordState };

/** The agent reads files of at most 64 MB (images/x11/agent/files.ts); a longer recording stays in the box. */
export const RECORDING_MAX_BYTES = 64 * 1024 * 1024;
const COPY_TIMEOUT_MS = 120_000;

/** Copies still under way, per box: removal waits for them. */
const copying = new Map<string, Set<Promise<void>>>();

/** A recording's entry, on its screen, naming who started or stopped it; a store failure is logged. */
async function mark(boxId: string, screen: number, event: string, data: Record<string, unknown>, by: Actor): Promise<void> {
  try {
    const who = await attribution(by);
    await recordEntry(boxId, { actor: who.actor, event, screen, data: { ...data, ...who.data } });
  } catch (err) {
    log.error({ err, box: boxId }, `trace ${event} failed`);
  }
}

/** Marks a recording's start in the trace (after the agent started it); `why` says what started it. */
export async function noteRecordingStarted(box: RunningBox, screen: number, state: RecordState, by: Actor, why?: string): Promise<void> {
  await mark(box.id, screen, "recording_started", { fps: state.fps, path: state.path, started_at_ms: state.started_at_ms, ...(why ? { why } : {}) }, by);
}

/**
 * After the agent stopped a recording: copies the file into the store and marks the stop in the
 * trace with the recording's id. In the background unless `wait`: a batch answers first.
 */
export function noteRecordingStopped(box: RunningBox, screen: number, state: RecordState, by: Actor, wait = false): Promise<void> {
  const p = keep(box, screen, state, by).catch((err) => log.error({ err, box: box.id }, "keeping a recording failed"));
  let set = copying.get(box.id);
  if (!set) copying.set(box.id, (set = new Set()));
  set.add(p);
  void p.finally(() => {
    set.delete(p);
    if (!set.size && copying.get(box.id) === set) copying.delete(box.id);
  });
  return wait ? p : Promise.resolve();
}

async function keep(box: RunningBox, screen: number, state: RecordState, by: Actor): Promise<void> {
  const started = state.started_at_ms ?? Date.now();
  const stopped = started + (state.duration_ms ?? 0);
  const base = { fps: state.fps, path: state.path, started_at_ms: started, duration_ms: state.duration_ms, bytes: state.bytes };
  if (!state.path) return;
  if ((state.bytes ?? 0) > RECORDING_MAX_BYTES) {
    const why = `the file is ${state.bytes} bytes, more than the ${RECORDING_MAX_BYTES} the trace keeps; it stays in the box`;
    await mark(box.id, screen, "recording_stopped", { ...base, kept: false, why }, by);
    return;
  }
  let data: Buffer;
  try {
    const r = await callAgent<{ contents_base64: string }>(box, agentCall("fileRead", {}, { path: state.path }), undefined, COPY_TIMEOUT_MS, "bulk");
    data = Buffer.from(r.contents_base64, "base64");
  } catch (err) {
    await mark(box.id, screen, "recording_stopped", { ...base, kept: false, why: `copying it out of the box failed: ${(err as Error).message}` }, by);
    return;
  }
  const id = await storeRecording({ box_id: box.id, screen, fps: state.fps ?? 0, started_at_ms: started, stopped_at_ms: stopped, path: state.path, data });
  await mark(box.id, screen, "recording_stopped", { ...base, bytes: data.length, kept: true, recording: id }, by);
}

/** Registered at boot, before the profile's flush (which closes the browser). */
export function registerRecordingKeep(): void {
  onBeforeRemove(keepBeforeRemove);
}

const REMOVE_WAIT_MS = 30_000;
/**
 * How long a box about to go has to say whether it records. A box whose agent hangs (frozen, out
 * of memory) was waited on for REMOVE_WAIT_MS before its removal went on; it cannot hand over a
 * recording anyway.
 */
const STATUS_WAIT_MS = 5_000;

/** A running box is about to go: its recordings are stopped and copied, copies under way awaited. */
async function keepBeforeRemove(row: BoxRow): Promise<void> {
  // An unclaimed pool box has never been reached by any call: it has nothing recorded.
  if (row.pooled) return;
  const work = (async () => {
    if (row.state === "ready") {
      const address = await boxAddress(row.id);
      if (address) {
        const box: RunningBox = { id: row.id, owner: row.owner, screens: row.screens, width: row.width, height: row.height, address };
        for (let n = 0; n < row.screens; n++) {
          const status = await callAgent<RecordState>(box, agentCall("recordingStatus", { n }), undefined, STATUS_WAIT_MS).catch(() => undefined);
          if (!status?.recording) continue;
          const stopped = await callAgent<RecordState>(box, agentCall("recordingStop", { n }), undefined, 15_000);
          await noteRecordingStopped(box, n, stopped, SERVER_ITSELF, true);
        }
      }
    }
    await Promise.all([...(copying.get(row.id) ?? [])]);
  })();
  let timer: NodeJS.Timeout | undefined;
  const done = await Promise.race([work.then(() => true), new Promise<false>((r) => (timer = setTimeout(() => r(false), REMOVE_WAIT_MS)))]).finally(() =>
    clearTimeout(timer),
  );
  if (!done) log.warn({ box: row.id }, `recordings not kept within ${REMOVE_WAIT_MS} ms of removal`);
}
