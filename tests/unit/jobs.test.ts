import { afterAll, describe, expect, it } from "vitest";
import { storeModules } from "../support/store-modules";

// Scheduled work: prune deletes week-old events (a real SQLite store, both backends), and the
// job queue that /v1/jobs/run drains under HOLM_SERVER_SCHEDULE=external.

type EventModule = typeof import("~/models/event.server");
type JobModule = typeof import("~/models/job.server");

const stores = storeModules("jobs");
const saved = { schedule: process.env.HOLM_SERVER_SCHEDULE, concurrency: process.env.HOLM_LAUNCH_CONCURRENCY, prune: process.env.HOLM_IMAGE_PRUNE_AFTER };

afterAll(() => {
  for (const [name, value] of [["HOLM_SERVER_SCHEDULE", saved.schedule], ["HOLM_LAUNCH_CONCURRENCY", saved.concurrency], ["HOLM_IMAGE_PRUNE_AFTER", saved.prune]] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

/** Fresh modules with a store open and the given schedule (env() caches per module graph). */
async function load(backend: "memory" | "local", schedule: "internal" | "external", concurrency = "1") {
  process.env.HOLM_SERVER_SCHEDULE = schedule;
  process.env.HOLM_LAUNCH_CONCURRENCY = concurrency;
  // prune() also prunes the engine's old box images: never this machine's real ones from a unit test.
  process.env.HOLM_IMAGE_PRUNE_AFTER = "0";
  await stores.openStore(backend);
  const events: EventModule = await import("~/models/event.server");
  const jobs: JobModule = await import("~/models/job.server");
  return { events, jobs };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(["memory", "local"] as const)("event retention: %s store", (backend) => {
  it('"the server keeps events for 7 days" (000): prune deletes older events and keeps newer ones', async () => {
    const { events, jobs } = await load(backend, "internal");
    const old = await events.recordEvent("box.created", { box_id: "box_old" });
    // The next event a millisecond later at least, so one cut-off falls between the two.
    while (Date.now() <= old.at_ms) await sleep(1);
    const newer = await events.recordEvent("box.removed", { box_id: "box_new" });
    const ids = async () => (await events.listEvents({ after: 0, limit: 100 })).events.map((e) => e.box_id);
    expect(await ids()).toEqual(["box_old", "box_new"]);

    // Exactly 7 days old is kept; a millisecond more is not.
    expect((await jobs.prune(old.at_ms + events.EVENT_KEEP_MS)).events).toBe(0);
    expect(await ids()).toEqual(["box_old", "box_new"]);
    const out = await jobs.prune(old.at_ms + events.EVENT_KEEP_MS + 1);
    expect(out.events).toBe(1);
    expect(await ids()).toEqual(["box_new"]);
    // Prune still does the trace part (nothing to remove here) and answers its counts.
    expect(out.traces).toEqual({ frames: 0, entries: 0, boxes: 0 });
    expect(newer.seq).toBeGreaterThan(old.seq);
  });
});

describe("job queue", () => {
  it("HOLM_SERVER_SCHEDULE is internal (default) or external; prune runs hourly by default", async () => {
    const { parseEnv } = await import("~/utils/env.server");
    expect(parseEnv({})).toMatchObject({ HOLM_SERVER_SCHEDULE: "internal", HOLM_SERVER_PRUNE_SECS: 3600 });
    expect(parseEnv({ HOLM_SERVER_SCHEDULE: "external", HOLM_SERVER_PRUNE_SECS: "1" })).toMatchObject({
      HOLM_SERVER_SCHEDULE: "external",
      HOLM_SERVER_PRUNE_SECS: 1,
    });
    expect(() => parseEnv({ HOLM_SERVER_SCHEDULE: "cron" })).toThrow(/HOLM_SERVER_SCHEDULE/);
    expect(() => parseEnv({ HOLM_SERVER_PRUNE_SECS: "0" })).toThrow(/HOLM_SERVER_PRUNE_SECS/);
  });

  it("internal schedule: a job starts at once, without /v1/jobs/run", async () => {
    const { jobs } = await load("memory", "internal");
    let started = false;
    jobs.enqueue("launch", "box_a", async () => {
      started = true;
    });
    await sleep(0);
    expect(started).toBe(true);
    expect(await jobs.runJobs()).toEqual({ ran: 0, deliveries: 0 });
  });

  it('external schedule: jobs wait for runJobs, oldest first, and "it stops taking new jobs after 50 seconds" (000)', async () => {
    const { jobs } = await load("memory", "external");
    const order: string[] = [];
    const job = (label: string, ms: number) =>
      jobs.enqueue("launch", label, async () => {
        order.push(`${label}:start`);
        await sleep(ms);
        order.push(`${label}:end`);
      });
    job("a", 300);
    job("b", 300);
    job("c", 300);
    await sleep(100);
    expect(order).toEqual([]);
    // One worker, a 450 ms budget: a starts at 0, b at ~300 ms, and c (at ~600 ms) is not taken.
    // (150 ms of slack for b: 30 ms was not enough on a loaded machine.)
    expect(await jobs.runJobs({ budgetMs: 450 })).toEqual({ ran: 2, deliveries: 0 });
    expect(order).toEqual(["a:start", "a:end", "b:start", "b:end"]);
    // A failing job counts as run and does not stop the others.
    jobs.enqueue("fork", "box_d", async () => {
      throw new Error("replay failed");
    });
    // The job's failure is logged by the copy of the logger the job module loaded (after resetModules).
    const { log } = await import("~/utils/log.server");
    const was = log.level;
    log.level = "silent";
    try {
      expect(await jobs.runJobs()).toEqual({ ran: 2, deliveries: 0 });
    } finally {
      log.level = was;
    }
    expect(order.slice(4)).toEqual(["c:start", "c:end"]);
    expect(await jobs.runJobs()).toEqual({ ran: 0, deliveries: 0 });
  });

  it("external schedule: runJobs runs up to HOLM_LAUNCH_CONCURRENCY jobs at once", async () => {
    const { jobs } = await load("memory", "external", "3");
    let running = 0;
    let most = 0;
    for (let i = 0; i < 6; i++) {
      jobs.enqueue("launch", `box_${i}`, async () => {
        most = Math.max(most, ++running);
        await sleep(30);
        running--;
      });
    }
    expect(await jobs.runJobs()).toEqual({ ran: 6, deliveries: 0 });
    expect(most).toBe(3);
  });
});

describe("background work and Prefer: wait", () => {
  it("a job queued by a call that prefers a short wait (an MCP fork) still waits the default 10 min for a paused box", async () => {
    const { jobs } = await load("memory", "internal");
    const wait: typeof import("~/models/paused-wait.server") = await import("~/models/paused-wait.server");
    let seen: number | undefined;
    const ran = new Promise<void>((resolve) =>
      wait.withPausedWait(50_000, () =>
        jobs.enqueue("fork", "box_x", async () => {
          await sleep(1);
          seen = wait.pausedWaitMs();
          resolve();
        }),
      ),
    );
    await ran;
    expect(seen).toBe(600_000);

    // A /v1/jobs/run call that prefers a short wait runs a queued fork with the default too.
    const ext = await load("memory", "external");
    const later: typeof import("~/models/paused-wait.server") = await import("~/models/paused-wait.server");
    seen = undefined;
    ext.jobs.enqueue("fork", "box_y", async () => void (seen = later.pausedWaitMs()));
    await later.withPausedWait(50_000, () => ext.jobs.runJobs());
    expect(seen).toBe(600_000);
  });
});

describe("webhook deliveries of one fan-out", () => {
  it("go in the order their events happened (the rows share next_at_ms and have random ids)", async () => {
    await load("local", "internal");
    const { db } = await import("~/utils/db.server");
    const delivery = await import("~/models/webhook-delivery.server");
    const now = Date.now();
    await db().insertInto("webhook").values({ id: "whk_order", owner: "ws_o", url: "http://example.test/", kinds_json: '["*"]', sealed_secret: "x", sealed_previous_secret: null, previous_until_ms: null, enabled: 1, created_by: "ws_o", created_at_ms: now, updated_at_ms: now }).execute();
    // Ids whose order is the reverse of the events'.
    const rows = Array.from({ length: 30 }, (_, i) => ({ id: `whd_${String(99 - i).padStart(3, "0")}`, webhook_id: "whk_order", event_seq: i + 1, kind: "box.created", body: "{}", status: "pending", attempts: 0, created_at_ms: now - 1000, next_at_ms: now - 1000, claimed_by: null, claimed_until_ms: null }));
    await db().insertInto("webhook_delivery").values(rows).execute();
    const seen: number[] = [];
    for (let i = 0; i < 5; i++) {
      const [d] = await delivery.dueDeliveries(now, { webhooks: new Set(), owners: new Map(), tried: new Set() }, 1, new Map());
      const row = await db().selectFrom("webhook_delivery").select(["id", "event_seq"]).where("id", "=", d!.id).executeTakeFirstOrThrow();
      seen.push(row.event_seq);
      await db().updateTable("webhook_delivery").set({ status: "delivered" }).where("id", "=", row.id).execute();
    }
    expect(seen).toEqual([1, 2, 3, 4, 5]);
  });
});
