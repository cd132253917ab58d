import { reapBoxes, sweepsDone, watchBoxExits } from "~/models/box-sync.server";
import { noteAllBrowserRestarts } from "~/models/browser-restarts.server";
import { collectDirectInput, recheckUnreached } from "~/models/direct-viewer-access.server";
import { watchDisk } from "~/models/disk-watch.server";
import { prune } from "~/models/job.server";
import { env } from "~/utils/env.server";
import { log } from "~/utils/log.server";

// Background work the server does on its own (HOLM_SERVER_SCHEDULE=internal, the default):
// reap every HOLM_SERVER_REAP_SECS, prune every HOLM_SERVER_PRUNE_SECS. With `external` none of
// it runs: a scheduler calls /v1/jobs/reap, /v1/jobs/prune and /v1/jobs/run instead.

interface Loop {
  timer: NodeJS.Timeout;
  /** The sweep in progress, if any. */
  running?: Promise<unknown>;
}

const loops: Loop[] = [];
/** How often the disk watch reads the free space (two statfs calls). */
const DISK_WATCH_SECS = 3;
let unwatch: (() => void) | undefined;

/** Runs `sweep` every `secs`, never two at once: a slow runtime or store must not pile them up. */
function every(name: string, secs: number, sweep: () => Promise<string | undefined>) {
  const loop: Loop = {
    timer: setInterval(() => {
      if (loop.running) return;
      loop.running = sweep()
        .then((done) => done && log.info(`${name}: ${done}`))
        .catch((err) => log.error({ err }, `${name} failed`))
        .finally(() => (loop.running = undefined));
    }, secs * 1000),
  };
  loop.timer.unref();
  loops.push(loop);
}

export function startLoops() {
  const e = env();
  // Not a scheduled job either: a box whose container ends on its own is `stopped` within moments.
  unwatch = watchBoxExits();
  // Not a scheduled job: the trace of what came in on direct control sockets (ADR 0029), always.
  every("direct viewer input", 2, async () => {
    await collectDirectInput();
    await recheckUnreached();
    return undefined;
  });
  // Not a scheduled job: a box filling the disk is stopped within seconds (ADR 0034), always.
  every("disk watch", DISK_WATCH_SECS, watchDisk);
  if (e.HOLM_SERVER_SCHEDULE === "external") {
    log.info("schedule external: reap, prune and queued jobs wait for /v1/jobs/reap, /v1/jobs/prune and /v1/jobs/run");
    return;
  }
  every("reaper", e.HOLM_SERVER_REAP_SECS, async () => {
    const { removed } = await reapBoxes();
    return removed ? `removed ${removed} box(es)` : undefined;
  });
  // A screen's browser that quit and was started again, from the box's log, into its trace.
  every("browser restarts", e.HOLM_SERVER_REAP_SECS, async () => {
    const n = await noteAllBrowserRestarts();
    return n ? `${n} browser restart(s) traced` : undefined;
  });
  every("prune", e.HOLM_SERVER_PRUNE_SECS, async () => {
    const { traces, events, images } = await prune();
    const kept = images.in_use.length ? `; kept ${images.in_use.join(", ")} (a container uses it)` : "";
    if (!traces.frames && !traces.entries && !traces.boxes && !events && !images.removed.length) return kept ? `nothing removed${kept}` : undefined;
    return `removed ${traces.frames} frame(s), ${traces.entries} trace entries, ${traces.boxes} trace(s) of removed boxes, ${events} event(s), ${images.removed.length} old image(s)${images.removed.length ? ` (${images.removed.join(", ")})` : ""}${kept}`;
  });
}

export async function stopLoops() {
  unwatch?.();
  unwatch = undefined;
  for (const loop of loops) clearInterval(loop.timer);
  await Promise.all(loops.map((loop) => loop.running));
  loops.length = 0;
  // A reaper's loop ends after 20 s while a slow runtime's rows are still gone through: those too.
  await sweepsDone();
}
