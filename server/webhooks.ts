import { events } from "~/models/event.server";
import { env } from "~/utils/env.server";
import { fanOut, initCursor, pruneDeliveries } from "~/models/webhook-delivery.server";
import { SendPool } from "~/models/webhook-pool.server";
import { log } from "~/utils/log.server";

// The webhook sender (docs/decisions/0018): a loop in the server process, separate from the
// request that caused an event. It wakes on each recorded event (the in-process emitter) and
// every second (events written by another process, retries coming due, pending deliveries left
// by a previous process), turns new events into delivery rows, and sends due rows through a
// SendPool: at most 8 at once, shared fairly (one per webhook, two per workspace, workspaces in
// turn), each attempt's end waking a sweep so its slot takes the next due row at once. With
// HOLM_SERVER_SCHEDULE=external (a server that cannot keep a loop alive) it does not run: /v1/jobs/run fans out and sends what is due (job.server.ts).

const TICK_MS = 1000;
const PRUNE_EVERY_MS = 3600 * 1000;

let timer: NodeJS.Timeout | undefined;
let sweeping: Promise<void> | undefined;
let again = false;
let lastPrune = 0;
const pool = new SendPool(() => wake());

async function sweep(): Promise<void> {
  await fanOut();
  const now = Date.now();
  if (now - lastPrune > PRUNE_EVERY_MS) {
    lastPrune = now;
    await pruneDeliveries({ now });
  }
  await pool.fill(now);
}

/** Runs a sweep now, or right after the one in progress. */
function wake() {
  if (!timer) return;
  if (sweeping) {
    again = true;
    return;
  }
  sweeping = sweep()
    .catch((err) => log.error({ err }, "webhooks"))
    .finally(() => {
      sweeping = undefined;
      if (again) {
        again = false;
        wake();
      }
    });
}

const onEvent = () => setImmediate(wake);

export async function startWebhooks() {
  await initCursor();
  if (env().HOLM_SERVER_SCHEDULE === "external") {
    log.info("schedule external: webhook deliveries wait for /v1/jobs/run");
    return;
  }
  timer = setInterval(wake, TICK_MS);
  timer.unref();
  events.on("event", onEvent);
  wake();
}

export async function stopWebhooks() {
  events.off("event", onEvent);
  if (timer) clearInterval(timer);
  timer = undefined;
  await sweeping;
  await pool.drain();
}
