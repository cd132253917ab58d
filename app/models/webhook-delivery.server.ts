import { randomBytes } from "node:crypto";
import { ApiError, notFound } from "~/utils/api-error.server";
import { SERVER_ID } from "~/utils/cluster.server";
import { db, lockKey } from "~/utils/db.server";
import { env } from "~/utils/env.server";
import { resolveTarget } from "~/utils/webhook-target.server";
import type { EventKind, HolmEvent } from "./event.server";
import { ownerKey } from "./sealed-store.server";
import { getWebhook, subscribers, webhookTarget } from "./webhook.server";
import { sendAttempt } from "./webhook-send.server";
import type { DeliveryInfo } from "~/protocol/api-webhook";
import { log } from "~/utils/log.server";

// Deliveries (docs/decisions/0018). Events are already rows (event.server.ts); a cursor kept in
// the `setting` table says which have been fanned out, so an event recorded just before a crash
// is still delivered after the restart. Fan-out writes one `webhook_delivery` row per subscribed
// webhook, `pending` and due now; the loop (server/webhooks.ts) sends due rows, never inside the
// request that caused the event. A 2xx is `delivered`; anything else is retried with exponential
// backoff and jitter until 24 h after the delivery was made, then `failed` (at once when the
// webhook's secret does not open with this server's key: no retry fixes that).

export const RETRY_WINDOW_MS = 24 * 3600 * 1000;
const RETRY_MAX_DELAY_MS = 3600 * 1000;
const CURSOR = "webhook_cursor";
/** Attempts in flight at once, across all webhooks. */
export const SEND_CONCURRENCY = 8;

/** A sender's claim outlasts its attempt's timeout by this much; then another server may send. */
const CLAIM_MARGIN_MS = 30_000;

const newId = () => `whd_${randomBytes(12).toString("hex")}`;

/** Starts the cursor at the newest event the first time: webhooks get what happens from now on. */
export async function initCursor(): Promise<void> {
  const { max } = await db().selectFrom("event").select((eb) => eb.fn.max("seq").as("max")).executeTakeFirstOrThrow();
  await db()
    .insertInto("setting")
    .values({ key: CURSOR, value: String(Number(max ?? 0)) })
    .onConflict((oc) => oc.column("key").doNothing())
    .execute();
}

/** The body sent for an event: the event as GET /v1/events shows it. */
function eventBody(r: { seq: number; at_ms: number; kind: string; owner: string | null; box_id: string | null; runtime: string | null; data_json: string | null }): string {
  const e: HolmEvent = { seq: Number(r.seq), at_ms: Number(r.at_ms), kind: r.kind as EventKind };
  if (r.owner) e.owner = r.owner;
  if (r.box_id) e.box_id = r.box_id;
  if (r.runtime) e.runtime = r.runtime;
  if (r.data_json) e.data = JSON.parse(r.data_json);
  return JSON.stringify(e);
}

/** Turns events past the cursor into pending deliveries, and moves the cursor; how many made. */
export async function fanOut(limit = 500): Promise<number> {
  return db()
    .transaction()
    .execute(async (tx) => {
      // One fan-out at a time (PostgreSQL: on any server), or two would make each delivery twice.
      await lockKey(tx, CURSOR);
      const cur = await tx.selectFrom("setting").select("value").where("key", "=", CURSOR).executeTakeFirst();
      const after = Number(cur?.value ?? 0);
      const rows = await tx.selectFrom("event").selectAll().where("seq", ">", after).orderBy("seq").limit(limit).execute();
      if (rows.length === 0) return 0;
      let made = 0;
      const now = Date.now();
      for (const r of rows) {
        // An event with no owner is the server token's: it goes to the server token's webhooks.
        for (const webhook_id of await subscribers(tx, ownerKey(r.owner), r.kind as EventKind)) {
          await tx
            .insertInto("webhook_delivery")
            .values({ id: newId(), webhook_id, event_seq: Number(r.seq), kind: r.kind, body: eventBody(r), status: "pending", attempts: 0, created_at_ms: now, next_at_ms: now })
            .execute();
          made++;
        }
      }
      const last = Number(rows[rows.length - 1]!.seq);
      await tx.insertInto("setting").values({ key: CURSOR, value: String(last) }).onConflict((oc) => oc.column("key").doUpdateSet({ value: String(last) })).execute();
      return made;
    });
}

/** Pending deliveries whose time has come, oldest first, not counting those in `busy`. */
export async function dueDeliveries(now: number, busy: ReadonlySet<string>, limit: number): Promise<string[]> {
  if (limit <= 0) return [];
  const rows = await db()
    .selectFrom("webhook_delivery")
    .select("id")
    .where("status", "=", "pending")
    .where("next_at_ms", "<=", now)
    // Another server is sending it now.
    .where((eb) => eb.or([eb("claimed_until_ms", "is", null), eb("claimed_until_ms", "<", now)]))
    .orderBy("next_at_ms")
    .limit(limit + busy.size)
    .execute();
  return rows.map((r) => r.id).filter((id) => !busy.has(id)).slice(0, limit);
}

/** The delay before attempt `attempts + 1`: base × 2^(attempts−1), at most an hour, ×[0.5, 1.5). */
export function retryDelay(attempts: number, baseMs: number, random = Math.random): number {
  const exp = Math.min(baseMs * 2 ** Math.max(0, attempts - 1), RETRY_MAX_DELAY_MS);
  return Math.round(exp * (0.5 + random()));
}

/**
 * Makes one attempt of a delivery and records it, if this server wins its claim in the store:
 * every server's loop finds the same due rows (ADR 0021), and only the one whose conditional
 * update takes a pending, due, unclaimed row sends it. A claim lapses after the attempt's timeout
 * and a margin, so a delivery whose sender died is sent again by another server then.
 */
export async function attemptDelivery(id: string): Promise<void> {
  const e = env();
  const now = Date.now();
  const claim = await db()
    .updateTable("webhook_delivery")
    .set({ claimed_by: SERVER_ID, claimed_until_ms: now + e.HOLM_WEBHOOK_TIMEOUT_MS + CLAIM_MARGIN_MS })
    .where("id", "=", id)
    .where("status", "=", "pending")
    .where("next_at_ms", "<=", now)
    .where((eb) => eb.or([eb("claimed_until_ms", "is", null), eb("claimed_until_ms", "<", now)]))
    .executeTakeFirst();
  if (Number(claim.numUpdatedRows) === 0) return;
  const d = await db().selectFrom("webhook_delivery").selectAll().where("id", "=", id).executeTakeFirst();
  if (!d || d.status !== "pending") return;
  // A secret that does not open with this server's key never will: that delivery fails at once
  // (`final`); a store error is retried as any failed attempt.
  const hook = await webhookTarget(d.webhook_id).catch((e: Error) => ({ error: e.message, final: e instanceof ApiError && !e.retryable }));
  if (!hook) {
    await db().deleteFrom("webhook_delivery").where("id", "=", id).execute();
    return;
  }
  const started = Date.now();
  let result: { ok: boolean; status?: number; latencyMs: number; error?: string };
  if ("error" in hook) {
    result = { ok: false, latencyMs: 0, error: "the webhook's secret does not open with this server's key" };
  } else if (!hook.enabled) {
    // A disabled webhook keeps its pending deliveries waiting; they still end after 24 h.
    result = { ok: false, latencyMs: 0, error: "the webhook is disabled" };
  } else {
    try {
      // Checked again now: the name may resolve elsewhere than at create, and the setting may have changed.
      const target = await resolveTarget(hook.url, e.HOLM_WEBHOOK_ALLOW_PRIVATE);
      const headers = { "holm-event-id": String(d.event_seq), "holm-event-kind": d.kind, "holm-delivery-id": d.id };
      result = await sendAttempt(target, d.body, headers, hook.secrets, e.HOLM_WEBHOOK_TIMEOUT_MS);
    } catch (err) {
      result = { ok: false, latencyMs: 0, error: `refused, not sent: ${(err as Error).message}` };
    }
  }
  const attempts = d.attempts + 1;
  const next = started + retryDelay(attempts, e.HOLM_WEBHOOK_RETRY_BASE_MS);
  const final = "error" in hook && hook.final;
  const status = result.ok ? "delivered" : final || next > Number(d.created_at_ms) + RETRY_WINDOW_MS ? "failed" : "pending";
  await db()
    .updateTable("webhook_delivery")
    .set({
      status,
      attempts,
      last_at_ms: started,
      last_status: result.status ?? null,
      latency_ms: result.latencyMs,
      error: result.ok ? null : (result.error ?? "failed").slice(0, 500),
      next_at_ms: status === "pending" ? next : null,
      claimed_by: null,
      claimed_until_ms: null,
    })
    .where("id", "=", id)
    // Only while the claim is still ours: one that lapsed belongs to the server that took it over.
    .where("claimed_by", "=", SERVER_ID)
    .execute();
  if (!result.ok) log.info(`webhook ${d.webhook_id} delivery ${d.id} (event ${d.event_seq}) attempt ${attempts}: ${result.error}; ${status === "pending" ? "will retry" : status}`);
}

/**
 * One sweep for a caller without the loop (HOLM_SERVER_SCHEDULE=external: /v1/jobs/run): fans new
 * events out, then sends the deliveries due now, SEND_CONCURRENCY at once, each at most once per
 * call (a retry that comes due again during the call waits for the next), taking none after
 * `until`. Answers how many attempts it made, delivered or not.
 */
export async function deliverDue(until: number): Promise<number> {
  await fanOut(10_000);
  const tried = new Set<string>();
  while (Date.now() < until) {
    const ids = await dueDeliveries(Date.now(), tried, SEND_CONCURRENCY);
    if (ids.length === 0) break;
    for (const id of ids) tried.add(id);
    await Promise.all(ids.map((id) => attemptDelivery(id).catch((err) => log.error({ err }, `webhook delivery ${id} failed`))));
  }
  return tried.size;
}

const info = (r: {
  id: string; event_seq: number; kind: string; status: string; attempts: number; created_at_ms: number; last_at_ms: number | null;
  next_at_ms: number | null; last_status: number | null; latency_ms: number | null; error: string | null; replay_of: string | null;
}): DeliveryInfo => ({
  id: r.id,
  event_seq: Number(r.event_seq),
  kind: r.kind,
  status: r.status as DeliveryInfo["status"],
  attempts: Number(r.attempts),
  created_at_ms: Number(r.created_at_ms),
  last_attempt_at_ms: r.last_at_ms === null ? null : Number(r.last_at_ms),
  next_attempt_at_ms: r.next_at_ms === null ? null : Number(r.next_at_ms),
  last_status: r.last_status,
  latency_ms: r.latency_ms,
  error: r.error,
  replay_of: r.replay_of,
});

const COLUMNS = ["id", "event_seq", "kind", "status", "attempts", "created_at_ms", "last_at_ms", "next_at_ms", "last_status", "latency_ms", "error", "replay_of"] as const;

/** A webhook's delivery log, newest first (404 when the owner has no such webhook). */
export async function listDeliveries(owner: string | null | undefined, webhookId: string, limit: number): Promise<DeliveryInfo[]> {
  await getWebhook(owner, webhookId);
  const rows = await db()
    .selectFrom("webhook_delivery")
    .select(COLUMNS)
    .where("webhook_id", "=", webhookId)
    .orderBy("created_at_ms", "desc")
    .orderBy("id", "desc")
    .limit(limit)
    .execute();
  return rows.map(info);
}

/** Replays one webhook may make in an hour (REPLAY_WINDOW_MS); README, "Webhooks". */
export const REPLAYS_PER_HOUR = 30;
const REPLAY_WINDOW_MS = 3600 * 1000;

/**
 * Replay: a new delivery of the same event (same body) to the same webhook, due now. Capped, as
 * each one is an outbound request a member aims at a receiver of their choosing: while a
 * delivery of that event to that webhook is still pending, the answer is that one (nothing new
 * is queued; it goes at its own next try), and a webhook makes at most REPLAYS_PER_HOUR replays
 * in any hour (then 409 denied, retryable, saying when).
 */
export async function replayDelivery(owner: string | null | undefined, webhookId: string, deliveryId: string): Promise<DeliveryInfo> {
  await getWebhook(owner, webhookId);
  const d = await db().selectFrom("webhook_delivery").selectAll().where("id", "=", deliveryId).where("webhook_id", "=", webhookId).executeTakeFirst();
  if (!d) throw notFound(`no delivery ${deliveryId} of webhook ${webhookId}`);
  return db()
    .transaction()
    .execute(async (tx) => {
      // The checks and the insert, one replay of a webhook at a time (PostgreSQL: on any server).
      await lockKey(tx, `webhook-replay:${webhookId}`);
      const pending = await tx
        .selectFrom("webhook_delivery")
        .select(COLUMNS)
        .where("webhook_id", "=", webhookId)
        .where("event_seq", "=", d.event_seq)
        .where("status", "=", "pending")
        .orderBy("created_at_ms", "desc")
        .executeTakeFirst();
      if (pending) return info(pending);
      const now = Date.now();
      const recent = await tx
        .selectFrom("webhook_delivery")
        .select("created_at_ms")
        .where("webhook_id", "=", webhookId)
        .where("created_at_ms", ">", now - REPLAY_WINDOW_MS)
        .where("replay_of", "is not", null)
        .orderBy("created_at_ms")
        .limit(REPLAYS_PER_HOUR)
        .execute();
      if (recent.length >= REPLAYS_PER_HOUR) {
        const after = new Date(Number(recent[0]!.created_at_ms) + REPLAY_WINDOW_MS).toISOString();
        throw new ApiError("denied", `webhook ${webhookId} made ${REPLAYS_PER_HOUR} replays in the last hour, the most it may; try again after ${after}`, { retryable: true });
      }
      const row = { id: newId(), webhook_id: webhookId, event_seq: d.event_seq, kind: d.kind, body: d.body, status: "pending", attempts: 0, created_at_ms: now, next_at_ms: now, replay_of: d.id };
      await tx.insertInto("webhook_delivery").values(row).execute();
      return info({ ...row, last_at_ms: null, last_status: null, latency_ms: null, error: null });
    });
}

/** Deletes deliveries that ended more than 7 days ago (as events are kept); part of prune. */
export async function pruneDeliveries(opts: { now: number }): Promise<number> {
  const out = await db()
    .deleteFrom("webhook_delivery")
    .where("status", "!=", "pending")
    .where("created_at_ms", "<", opts.now - 7 * 24 * 3600 * 1000)
    .executeTakeFirst();
  return Number(out.numDeletedRows);
}
