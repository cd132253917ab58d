import { PauseBusyError } from "~/runtime/runtime";
import { ApiError } from "~/utils/api-error.server";
import { withClusterLock } from "~/utils/cluster.server";
import { log } from "~/utils/log.server";
import type { Actor } from "./actor";
import { waitReady } from "./box-launch.server";
import {
  type BoxJson,
  type BoxRow,
  forgetAddress,
  loadRow,
  RUNTIME_LOST,
  lostToRuntime,
  requireSettled,
  runBeforeStop,
  runtimeOf,
  serial,
  setState,
  toBoxJson,
  trace,
  visibleRow,
} from "./box-record.server";
import { boxResumed } from "./box-resumed.server";
import { admitResume } from "./capacity.server";
import { type EventKind, recordEvent } from "./event.server";

// Pause, resume and stop of a box (box.server.ts re-exports them for /v1 and the console).

// What each lifecycle change records: its trace entry and its event, by the state it ends in.
const LIFECYCLE = {
  paused: { traced: "paused", event: "box.paused" },
  ready: { traced: "resumed", event: "box.ready" },
  stopped: { traced: "stopped", event: "box.stopped" },
} as const satisfies Record<string, { traced: string; event: EventKind }>;

/**
 * One lifecycle change of a box, shared by pause, resume and stop: the box must be visible and
 * settled, then (in the box's serial chain, on its current row) a box already in `to` answers as
 * it is; otherwise `run` checks the state and moves the container (returning any other columns
 * to write), and the new state, the trace entry and the event (each naming the actor) are written.
 *
 * The chain is per process; servers sharing a store (ADR 0021) also take the box's lock in Redis,
 * so a pause on one and a pause on another at once are one pause (one entry, one event), and a
 * resume on each is one resume, not a second unpause the engine refuses: the second reads the row
 * the first left and answers the box as it is.
 */
async function changeLifecycle(
  actor: Actor,
  id: string,
  to: keyof typeof LIFECYCLE,
  run: (cur: BoxRow) => Promise<Partial<BoxRow> | void>,
): Promise<BoxJson> {
  const row = await visibleRow(actor, id);
  requireSettled(row);
  return serial(id, () =>
    withClusterLock(`box:${id}`, async () => {
      const cur = (await loadRow(id))!;
      if (cur.state === to) return toBoxJson(cur);
      const extra = await run(cur).catch((err) => vanished(cur, err));
      // Not conditional on the state read: the reaper (of any server) may have written what it saw
      // of this very change meanwhile (`ready` once the container runs), and this change, its
      // desktop and its event are still the ones to record.
      await setState(cur, to, null, extra ?? {});
      await trace(id, LIFECYCLE[to].traced, {}, actor);
      await recordEvent(LIFECYCLE[to].event, { owner: cur.owner, box_id: id, runtime: cur.runtime, by: actor });
      return toBoxJson(cur);
    }),
  );
}

export function pauseBox(actor: Actor, id: string): Promise<BoxJson> {
  return changeLifecycle(actor, id, "paused", async (cur) => {
    if (cur.state !== "ready") throw new ApiError("denied", `box ${id} is ${cur.state}; only a ready box pauses`);
    try {
      await runtimeOf(cur).pause(cur.runtime_ref!);
    } catch (err) {
      if (!(err instanceof PauseBusyError)) throw err;
      log.error({ err }, `box ${id} would not freeze`);
      throw new ApiError("unavailable", `box ${id} is busy starting processes and could not be paused; try again`);
    }
  });
}

export async function resumeBox(actor: Actor, id: string): Promise<BoxJson> {
  // The place a stopped box's resume was admitted to, held until its row says `ready` (or it failed).
  const held: { release?: () => void } = {};
  try {
    const box = await changeLifecycle(actor, id, "ready", async (cur) => {
      const rt = runtimeOf(cur);
      if (cur.state !== "paused" && cur.state !== "stopped") {
        throw new ApiError("denied", `box ${id} is ${cur.state}; it cannot resume`, { retryable: cur.state === "unreachable" });
      }
      let restarted: boolean;
      if (cur.state === "stopped") {
        // A stopped box takes a container's place and memory again, as a new one would: admitted
        // the same way (503 unavailable when the server is full, ADR 0016), the box left stopped.
        held.release = await admitResume();
        await rt.start(cur.runtime_ref!);
        restarted = true;
      } else {
        // A paused one its engine could only restart (runtime.ts, unpause) comes back with a new desktop too.
        restarted = (await rt.unpause(cur.runtime_ref!)) === "restarted";
      }
      // A new desktop: new viewer URLs.
      if (!restarted) return { last_used_ms: Date.now() };
      forgetAddress(id);
      await waitReady(rt, cur);
      return { last_used_ms: Date.now(), desktop: cur.desktop + 1 };
    });
    held.release?.();
    await boxResumed(id);
    return box;
  } finally {
    held.release?.();
  }
}

/**
 * Why a change of a box failed, when its container is not there any more (removed behind holm's
 * back, before the reaper or the engine's news of it): the box is made `gone` as the reaper would,
 * and the call answers 410 rather than the engine's "no such container" as a 500. Anything else
 * is thrown as it was.
 */
async function vanished(cur: BoxRow, err: unknown): Promise<never> {
  if (err instanceof ApiError || !cur.runtime_ref) throw err;
  const now = await runtimeOf(cur)
    .inspect(cur.runtime_ref)
    .catch(() => undefined);
  if (now?.state !== "missing") throw err;
  await lostToRuntime(cur, cur.state);
  throw new ApiError("gone", `box ${cur.id} is gone: ${RUNTIME_LOST}`);
}

export function stopBox(actor: Actor, id: string): Promise<BoxJson> {
  return changeLifecycle(actor, id, "stopped", async (cur) => {
    if (cur.state !== "ready" && cur.state !== "paused") {
      throw new ApiError("denied", `box ${id} is ${cur.state}; it cannot stop`);
    }
    const rt = runtimeOf(cur);
    // Refused before a paused box is woken for a stop that cannot happen.
    if (rt.noStop) throw new ApiError("unsupported", rt.noStop);
    // A paused container ignores the stop signal until it runs again; then a browser profile's last writes (box-record.server.ts).
    if (cur.state !== "paused" || (await rt.unpause(cur.runtime_ref!)) !== "restarted") await runBeforeStop(cur);
    await rt.stop(cur.runtime_ref!);
    forgetAddress(id);
  });
}
