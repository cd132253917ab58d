import { env, publicUrl } from "~/utils/env.server";
import { pruneEvents } from "./event.server";
import { detached } from "./paused-wait.server";
import { type ImagePruneResult, pruneImages } from "./image-prune.server";
import { pruneRecordings } from "./recording-store.server";
import { type PruneResult, pruneCutoffs, pruneTraces } from "./trace.server";
import { pruneDeliveries } from "./webhook-delivery.server";
import { deliverDue } from "./webhook-pool.server";
import { log } from "~/utils/log.server";

// Scheduled work (seed 000, "Scheduled work"): the queue of jobs that /v1/jobs/run takes, and
// prune. With HOLM_SERVER_SCHEDULE=internal (the default) a queued job starts at once and
// server/loops.ts reaps and prunes on timers; with `external` a job waits in this process until
// a scheduler calls /v1/jobs/run, and nothing runs on a timer. The queue is in memory: a launch
// queued and not yet run is lost with the process (the next boot makes its box `failed` with the
// reason, box-sync.server.ts); a build is also a row of the store, which the next boot queues
// again (image.server.ts).

export type JobKind = "launch" | "fork" | "build";

interface Job {
  kind: JobKind;
  /** What the job is for (a box id), for the log. */
  label: string;
  run: () => Promise<unknown>;
}

const waiting: Job[] = [];

/** "It stops taking new jobs after 50 seconds." (000) */
export const RUN_BUDGET_MS = 50_000;

/** Queues work: at once with an internal schedule, else when /v1/jobs/run takes it. */
export function enqueue(kind: JobKind, label: string, run: () => Promise<unknown>): void {
  const job = { kind, label, run };
  if (env().HOLM_SERVER_SCHEDULE === "internal") {
    void perform(job);
    return;
  }
  waiting.push(job);
  callRun();
}

async function perform(job: Job): Promise<void> {
  try {
    // A job is no call's: it waits for a paused box as long as any (not a queuing call's Prefer: wait).
    await detached(job.run);
  } catch (err) {
    log.error({ err }, `${job.kind} job for ${job.label} failed`);
  }
}

/**
 * Runs waiting jobs, oldest first, a few at a time (HOLM_LAUNCH_CONCURRENCY), taking none after
 * `budgetMs`; answers when the ones it took are done. A job that fails still counts as run (its
 * box records why). A fork's replay is queued after its box's launch, so it never waits on a
 * launch that no one has taken.
 */
export async function runJobs(opts: { budgetMs?: number } = {}): Promise<{ ran: number; deliveries: number }> {
  const until = Date.now() + (opts.budgetMs ?? RUN_BUDGET_MS);
  // With an external schedule nothing sends webhook deliveries on a timer (server/webhooks.ts
  // does not run): this call does, beside the jobs. With an internal one the loop sends them,
  // and sending here too could attempt a delivery the loop has in flight.
  const deliveries = env().HOLM_SERVER_SCHEDULE === "external" ? deliverDue(until) : Promise.resolve(0);
  let ran = 0;
  const take = () => (Date.now() < until ? waiting.shift() : undefined);
  const worker = async () => {
    for (let job = take(); job; job = take()) {
      await perform(job);
      ran++;
    }
  };
  await Promise.all(Array.from({ length: env().HOLM_LAUNCH_CONCURRENCY }, worker));
  return { ran, deliveries: await deliveries };
}

/**
 * "When HOLM_PUBLIC_URL and CRON_SECRET are set, the server calls its own /v1/jobs/run when it
 * queues a job, so a job does not wait for the scheduler." (000) Fire and forget: a failure is
 * logged, and the job waits for the scheduler's next call.
 */
function callRun(): void {
  const { HOLM_PUBLIC_URL, CRON_SECRET } = env();
  if (!HOLM_PUBLIC_URL || !CRON_SECRET) return;
  const url = `${publicUrl()}/v1/jobs/run`;
  fetch(url, { method: "POST", headers: { authorization: `Bearer ${CRON_SECRET}` } })
    .then(async (res) => {
      const text = await res.text();
      if (!res.ok) log.error(`${url} answered ${res.status}: ${text.slice(0, 300)}`);
    })
    .catch((err) => log.error({ err }, `calling ${url} failed; the job waits for the scheduler`));
}

/**
 * Prune: old frames, trace entries and traces of long-removed boxes (trace.server.ts), events
 * older than 7 days, box images of earlier builds (image-prune.server.ts), and webhook deliveries that ended 7 days ago (the webhook loop prunes those
 * too, but it does not run with an external schedule). The answer of /v1/jobs/prune is the
 * seed's `{frames, entries, boxes}`; the rest is for the log.
 */
export async function prune(now = Date.now()): Promise<{ traces: PruneResult; events: number; deliveries: number; images: ImagePruneResult }> {
  const traces = await pruneTraces({ now });
  // Recordings go with their trace's entries (recording.server.ts); counted in the log only.
  const recordings = await pruneRecordings(pruneCutoffs({ now }));
  if (recordings) log.info(`pruned ${recordings} recording(s)`);
  const events = await pruneEvents({ now });
  const deliveries = await pruneDeliveries({ now });
  // An engine that does not answer must not stop the rest of prune: the next run tries again.
  const images = await pruneImages(now).catch((err) => {
    log.error({ err }, "pruning old images failed");
    return { removed: [], in_use: [] };
  });
  return { traces, events, deliveries, images };
}
