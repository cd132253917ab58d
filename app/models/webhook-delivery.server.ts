import { randomBytes } from "node:crypto";
import { ApiError, notFound } from "~/utils/api-error.server";
import { SERVER_ID } from "~/utils/cluster.server";
import { sql } from "kysely";
import { db, lockKey } from "~/utils/db.server";
import { env } from "~/utils/env.server";
import { resolveTarget } from "~/utils/webhook-target.server";
import type { EventKind, HolmEvent } from "./event.server";
import { ownerKey } from "./sealed-store.server";
import { HELD_PAST_WINDOW, RETRY_WINDOW_MS, getWebhook, releaseHeld, subscribers, webhookTarget } from "./webhook.server";
import { sendAttempt } from "./webhook-send.server";
import type { DeliveryInfo } from "~/protocol/api-webhook";
import { log } from "~/utils/log.server";

// Deliveries (docs/decisions/0018). Events are already rows (event.server.ts); a cursor kept in
// the `setting` table says which have been fanned out, so an event recorded just before a crash
// is still delivered after the restart. Fan-out writes one `webhook_delivery` row per subscribed
// webhook, `pending` and due now; the loop (server/webhooks.ts) sends due rows, never inside the
// request that caused the event. A 2xx is `delivered`; anything else is retried with exponential
// backoff and jitter until 24 h after the delivery was made, then `failed` (at once when the
// webhook's secret does not open with this server's key: no retry fixes that). A disabled
// webhook's pending rows are held, not tried (updateWebhook): they end 24 h after they were made,
// unsent, when no enabling came first.

const RETRY_MAX_DELAY_MS = 3600 * 1000;
const CURSOR = "webhook_cursor";
/** Attempts in flight at once, across all webhooks. */
export const SEND_CONCURRENCY = 8;
/** Attempts in flight at once for one workspace: one whose receivers hang holds no more. */
export const OWNER_CONCURRENCY = 2;

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

export interface DueDelivery {
  id: string;
  webhook_id: string;
  /** The webhook's workspace (ownerKey): the unit of fairness. */
  owner: string;
}

/** What the caller is sending now, and what it must not pick again. */
export interface Busy {
  /** Webhooks with an attempt in flight here. */
  webhooks: ReadonlySet<string>;
  /** Attempts in flight here, per workspace. */
  owners: ReadonlyMap<string, number>;
  /** Deliveries not to pick (each at most once per /v1/jobs/run call). */
  tried?: ReadonlySet<string>;
}

/**
 * Up to `limit` due deliveries to start now, picked fairly (docs/decisions/0018, "Fair share"):
 * at most one attempt per webhook (none for a webhook with an attempt in flight, here or claimed
 * by another server), at most OWNER_CONCURRENCY per workspace counting those in flight, and
 * workspaces taken in turn, the one served longest ago first (`servedAt`: a counter per
 * workspace, bumped by the caller at each start), not by age of the row: a workspace whose
 * receivers hang holds at most its own share, and another workspace's new delivery takes the
 * next free slot. Within a webhook, its oldest due row first.
 */
export async function dueDeliveries(now: number, busy: Busy, limit: number, servedAt: ReadonlyMap<string, number>): Promise<DueDelivery[]> {
  if (limit <= 0) return [];
  const hooks = await db()
    .selectFrom("webhook_delivery as d")
    .innerJoin("webhook as w", "w.id", "d.webhook_id")
    .select(["d.webhook_id as webhook_id", "w.owner as owner", (eb) => eb.fn.min("d.next_at_ms").as("due")])
    .where("d.status", "=", "pending")
    .where("d.next_at_ms", "<=", now)
    // A disabled webhook's rows are held: never picked, so never tried over and over.
    .where("w.enabled", "=", 1)
    .groupBy(["d.webhook_id", "w.owner"])
    // A webhook one of whose deliveries a server is sending now waits for that attempt to end.
    .having(sql<number>`max(coalesce(d.claimed_until_ms, 0))`, "<", now)
    .execute();
  const byOwner = new Map<string, { webhook_id: string; due: number }[]>();
  for (const h of hooks) {
    if (busy.webhooks.has(h.webhook_id)) continue;
    const list = byOwner.get(h.owner) ?? [];
    list.push({ webhook_id: h.webhook_id, due: Number(h.due) });
    byOwner.set(h.owner, list);
  }
  for (const list of byOwner.values()) list.sort((a, b) => a.due - b.due);
  const oldest = (o: string) => byOwner.get(o)![0]!.due;
  const owners = [...byOwner.keys()].sort((a, b) => (servedAt.get(a) ?? 0) - (servedAt.get(b) ?? 0) || oldest(a) - oldest(b));
  const picked: DueDelivery[] = [];
  const taken = new Map<string, number>();
  // Rounds: each workspace with room left takes one of its webhooks per round.
  for (let progress = true; progress && picked.length < limit; ) {
    progress = false;
    for (const owner of owners) {
      if (picked.length >= limit) break;
      const room = OWNER_CONCURRENCY - (busy.owners.get(owner) ?? 0) - (taken.get(owner) ?? 0);
      const list = byOwner.get(owner)!;
      if (room <= 0 || list.length === 0) continue;
      progress = true;
      const hook = list.shift()!;
      const id = await oldestDue(hook.webhook_id, now, busy.tried);
      if (!id) continue;
      picked.push({ id, webhook_id: hook.webhook_id, owner });
      taken.set(owner, (taken.get(owner) ?? 0) + 1);
    }
  }
  return picked;
}

/** A webhook's due, unclaimed delivery to send next (its oldest), not one of `tried`. */
async function oldestDue(webhookId: string, now: number, tried?: ReadonlySet<string>): Promise<string | undefined> {
  const rows = await db()
    .selectFrom("webhook_delivery")
    .select("id")
    .where("webhook_id", "=", webhookId)
    .where("status", "=", "pending")
    .where("next_at_ms", "<=", now)
    .where((eb) => eb.or([eb("claimed_until_ms", "is", null), eb("claimed_until_ms", "<", now)]))
    // Rows of one fan-out share their next_at_ms and have random ids: the event's seq keeps
    // one webhook's deliveries in the order the events happened.
    .orderBy("next_at_ms")
    .orderBy("event_seq")
    .orderBy("id")
    .limit(tried ? 50 : 1)
    .execute();
  return rows.find((r) => !tried?.has(r.id))?.id;
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
    // Disabled since the pick: not an attempt. The row waits (not picked again) for the enabling.
    await db().updateTable("webhook_delivery").set({ claimed_by: null, claimed_until_ms: null }).where("id", "=", id).where("claimed_by", "=", SERVER_ID).execute();
    return;
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
      // The webhook's row lock, then its state: an enabling or disabling at once waits for this
      // insert (and then sees it), or has committed before the read, so a replay is never left
      // held (no next try) on an enabled webhook.
      await tx.updateTable("webhook").set((eb) => ({ enabled: eb.ref("enabled") })).where("id", "=", webhookId).execute();
      const hook = await tx.selectFrom("webhook").select("enabled").where("id", "=", webhookId).executeTakeFirst();
      if (!hook) throw notFound(`no webhook ${webhookId}`);
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
      // A disabled webhook's replay is held as its other pending rows are, until it is enabled.
      const row = { id: newId(), webhook_id: webhookId, event_seq: d.event_seq, kind: d.kind, body: d.body, status: "pending", attempts: 0, created_at_ms: now, next_at_ms: hook.enabled === 1 ? now : null, replay_of: d.id };
      await tx.insertInto("webhook_delivery").values(row).execute();
      return info({ ...row, last_at_ms: null, last_status: null, latency_ms: null, error: null });
    });
}

/**
 * Deletes deliveries that ended more than 7 days ago (as events are kept); part of prune. First
 * ends the deliveries a disabled webhook has held past their 24 h: `failed`, never sent; and
 * makes due any row still held on an enabled webhook (releaseHeld), whatever left it so.
 */
export async function pruneDeliveries(opts: { now: number }): Promise<number> {
  const disabled = db().selectFrom("webhook").select("id").where("enabled", "=", 0);
  await db()
    .updateTable("webhook_delivery")
    .set({ status: "failed", next_at_ms: null, error: HELD_PAST_WINDOW })
    .where("status", "=", "pending")
    .where("created_at_ms", "<", opts.now - RETRY_WINDOW_MS)
    .where("webhook_id", "in", disabled)
    .execute();
  await releaseHeld(db(), opts.now);
  const out = await db()
    .deleteFrom("webhook_delivery")
    .where("status", "!=", "pending")
    .where("created_at_ms", "<", opts.now - 7 * 24 * 3600 * 1000)
    .executeTakeFirst();
  return Number(out.numDeletedRows);
}
