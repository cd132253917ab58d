import { EngineTimeout } from "~/runtime/engine-bound.server";
import { runtime } from "~/runtime/index.server";
import type { RuntimeBox } from "~/runtime/runtime";
import { log } from "~/utils/log.server";

// Containers an engine did not remove when asked: a removal it did not answer
// (box-record.server.ts removeContainer), or a launch that timed out there, after which a slow
// engine may still create or start the container (box-launch.server.ts). The reaper asks again
// every sweep until the engine answers (box-sync.server.ts). Kept in memory: a server that
// restarts removes the containers of removed boxes it finds at boot (scanRuntime) all the same.

/** A container left on an engine; `ref` null when its create timed out (found by its holm.box label). */
export interface Leftover {
  boxId: string;
  runtime: string;
  ref: string | null;
  /**
   * With no ref: looked for by label until then (ms), not only once. An engine that took the
   * create and then stalled may make the container minutes after the call gave up, and after
   * the first sweep that found none.
   */
  lookUntil?: number;
}

/** How long a create that timed out is watched for a container it makes late. */
export const LATE_CREATE_MS = 10 * 60_000;

/** The containers left on engines, by box. */
export const leftovers = new Map<string, Leftover>();

/** Removes runtime `name`'s leftovers when `answering()` says its engine answers; an engine that times out keeps the rest for the next sweep. */
export async function removeLeftovers(name: string, answering: () => Promise<boolean>): Promise<void> {
  const mine = [...leftovers.values()].filter((l) => l.runtime === name);
  const rt = runtime(name);
  if (!mine.length || !rt || !(await answering())) return;
  let found: RuntimeBox[] | undefined;
  for (const left of mine) {
    try {
      const ref = left.ref ?? (found ??= await rt.list()).find((b) => b.boxId === left.boxId)?.ref;
      if (ref) await rt.remove(ref);
      else if (Date.now() < (left.lookUntil ?? 0)) continue;
      leftovers.delete(left.boxId);
      log.info({ box: left.boxId, runtime: name }, ref ? "removed the container its runtime had not removed" : "its runtime has no container for the box");
    } catch (err) {
      log.error({ err, box: left.boxId }, `the container left on the ${name} runtime was not removed; asked again at the next sweep`);
      if (err instanceof EngineTimeout) return;
    }
  }
}
