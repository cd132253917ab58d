import { reapBoxes } from "~/models/box.server";
import { env } from "~/utils/env.server";

// Background work the server does on its own. With HOLM_SERVER_SCHEDULE=external a scheduler
// calls /v1/jobs/* instead (not needed by a long-running server).

let reaper: NodeJS.Timeout | undefined;
let reaping: Promise<unknown> | undefined;

export function startLoops() {
  const every = env().HOLM_SERVER_REAP_SECS * 1000;
  reaper = setInterval(() => {
    // Never two sweeps at once: a slow runtime must not pile them up.
    if (reaping) return;
    reaping = reapBoxes()
      .then((r) => r.removed && console.log(`[holm] reaper removed ${r.removed} box(es)`))
      .catch((err) => console.error("[holm] reaper failed:", err))
      .finally(() => (reaping = undefined));
  }, every);
  reaper.unref();
}

export async function stopLoops() {
  if (reaper) clearInterval(reaper);
  reaper = undefined;
  await reaping;
}
