import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import type { Database } from "../../db/schema";
import { WEBHOOKS_PER_OWNER, type WebhookCreate, type WebhookPatch } from "~/protocol/api-webhook";
import { ApiError, notFound } from "~/utils/api-error.server";
import { db, lockKey } from "~/utils/db.server";
import { env } from "~/utils/env.server";
import { seal, unseal } from "~/utils/seal.server";
import { resolveTarget } from "~/utils/webhook-target.server";
import type { EventKind } from "./event.server";
import { ownerKey } from "./sealed-store.server";

// A workspace's webhooks (issue 16, docs/decisions/0018): a URL, the event kinds it wants, and a
// signing secret. The secret is made here (or given), shown once in the create answer, and kept
// only sealed: no list, page, error or log line has it again. One owner's webhooks are invisible
// to every other owner (every query names the owner: another's id is 404). The target is checked
// against private ranges here, and again before each attempt (webhook-delivery.server.ts).

export interface WebhookInfo {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
  created_at_ms: number;
  updated_at_ms: number;
  /** Until when the secret before the last rotation also signs; null when it no longer does. */
  rotation_ends_at_ms: number | null;
}

type Row = { id: string; url: string; kinds_json: string; enabled: number; created_at_ms: number; updated_at_ms: number; previous_until_ms: number | null };

const info = (r: Row): WebhookInfo => ({
  id: r.id,
  url: r.url,
  events: JSON.parse(r.kinds_json) as string[],
  enabled: r.enabled === 1,
  created_at_ms: Number(r.created_at_ms),
  updated_at_ms: Number(r.updated_at_ms),
  rotation_ends_at_ms: r.previous_until_ms !== null && Number(r.previous_until_ms) > Date.now() ? Number(r.previous_until_ms) : null,
});

const COLUMNS = ["id", "url", "kinds_json", "enabled", "created_at_ms", "updated_at_ms", "previous_until_ms"] as const;
// The additional data the secret is sealed with: a sealed secret copied to another row does not open.
const where = (id: string) => `webhook\u0000${id}`;

/** Checks a target now (400 when it is not allowed); the same check runs before each attempt. */
async function checkUrl(url: string): Promise<string> {
  // Kept as parsed (`href`), the very URL the sender fetches, not as typed.
  return (await resolveTarget(url, env().HOLM_WEBHOOK_ALLOW_PRIVATE)).url.href;
}

/** Makes a webhook; the answer carries the secret, the only time it is ever given out. */
export async function createWebhook(
  owner: string | null | undefined,
  createdBy: string,
  body: WebhookCreate,
): Promise<WebhookInfo & { secret: string }> {
  const url = await checkUrl(body.url);
  const secret = body.secret ?? newSecret();
  const id = `whk_${randomBytes(12).toString("hex")}`;
  const now = Date.now();
  const o = ownerKey(owner);
  const row = {
    id,
    owner: o,
    url,
    kinds_json: JSON.stringify(body.events),
    sealed_secret: seal("webhooks", secret, where(id)),
    sealed_previous_secret: null,
    previous_until_ms: null,
    enabled: body.enabled === false ? 0 : 1,
    created_by: createdBy,
    created_at_ms: now,
    updated_at_ms: now,
  };
  await db()
    .transaction()
    .execute(async (tx) => {
      // The count and the insert of one owner's webhooks, one transaction at a time (PostgreSQL).
      await lockKey(tx, `webhook:${o}`);
      const { n } = await tx
        .selectFrom("webhook")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("owner", "=", o)
        .executeTakeFirstOrThrow();
      if (Number(n) >= WEBHOOKS_PER_OWNER) {
        throw new ApiError("denied", `a workspace has at most ${WEBHOOKS_PER_OWNER} webhooks; delete one first`, { retryable: false });
      }
      await tx.insertInto("webhook").values(row).execute();
    });
  return { ...info(row), secret };
}

export async function listWebhooks(owner: string | null | undefined): Promise<WebhookInfo[]> {
  const rows = await db().selectFrom("webhook").select(COLUMNS).where("owner", "=", ownerKey(owner)).orderBy("created_at_ms").orderBy("id").execute();
  return rows.map(info);
}

/** One webhook of the owner; 404 for an id the owner does not have (another's included). */
export async function getWebhook(owner: string | null | undefined, id: string): Promise<WebhookInfo> {
  const row = await db().selectFrom("webhook").select(COLUMNS).where("owner", "=", ownerKey(owner)).where("id", "=", id).executeTakeFirst();
  if (!row) throw notFound(`no webhook ${id}`);
  return info(row);
}

/** How long a delivery is retried after it was made; then it is `failed`. */
export const RETRY_WINDOW_MS = 24 * 3600 * 1000;

/** What a delivery held while its webhook was disabled says when its retry window ends. */
export const HELD_PAST_WINDOW = "not sent: the webhook was disabled until 24 h after the delivery was made";

/**
 * Changes a webhook. Disabling holds its pending deliveries: none is tried (the sender picks only
 * enabled webhooks' rows), so none counts an attempt or grows its backoff, and each shows no next
 * attempt. Any change that leaves it enabled makes held rows due at once (those whose 24 h ended
 * meanwhile: `failed`); rows with a next try keep it, so enabling twice skips no backoff. Not
 * decided from a read before the update: an enabling and a disabling at once (PostgreSQL) would
 * each see the other's state and leave an enabled webhook with rows held for ever.
 */
export async function updateWebhook(owner: string | null | undefined, id: string, patch: WebhookPatch): Promise<WebhookInfo> {
  await getWebhook(owner, id);
  const now = Date.now();
  const set: { url?: string; kinds_json?: string; enabled?: number; updated_at_ms: number } = { updated_at_ms: now };
  if (patch.url !== undefined) set.url = await checkUrl(patch.url);
  if (patch.events !== undefined) set.kinds_json = JSON.stringify(patch.events);
  if (patch.enabled !== undefined) set.enabled = patch.enabled ? 1 : 0;
  await db()
    .transaction()
    .execute(async (tx) => {
      // Takes the webhook's row lock first: a concurrent change or replay waits for this one.
      await tx.updateTable("webhook").set(set).where("owner", "=", ownerKey(owner)).where("id", "=", id).execute();
      if (patch.enabled === false) await tx.updateTable("webhook_delivery").where("webhook_id", "=", id).where("status", "=", "pending").set({ next_at_ms: null }).execute();
      else await releaseHeld(tx, now, id);
    });
  return getWebhook(owner, id);
}

/**
 * Makes due the held rows (pending, no next try: only ever held ones) of enabled webhooks (of
 * `id`, or all), failing those past their 24 h. Each statement reads `enabled` itself, in the
 * caller's transaction: idempotent, and run by any PATCH leaving a webhook enabled and by prune.
 */
export async function releaseHeld(q: Kysely<Database>, now: number, id?: string): Promise<void> {
  const enabled = q.selectFrom("webhook").select("id").where("enabled", "=", 1);
  const held = () => {
    const u = q.updateTable("webhook_delivery").where("status", "=", "pending").where("next_at_ms", "is", null).where("webhook_id", "in", enabled);
    return id === undefined ? u : u.where("webhook_id", "=", id);
  };
  await held().where("created_at_ms", "<", now - RETRY_WINDOW_MS).set({ status: "failed", error: HELD_PAST_WINDOW }).execute();
  await held().set({ next_at_ms: now }).execute();
}

/** Deletes a webhook and its delivery log: nothing more is sent to it. */
export async function deleteWebhook(owner: string | null | undefined, id: string): Promise<{ id: string; deleted: true }> {
  await getWebhook(owner, id);
  await db()
    .transaction()
    .execute(async (tx) => {
      await tx.deleteFrom("webhook_delivery").where("webhook_id", "=", id).execute();
      await tx.deleteFrom("webhook").where("owner", "=", ownerKey(owner)).where("id", "=", id).execute();
    });
  return { id, deleted: true };
}

const newSecret = () => `whsec_${randomBytes(24).toString("base64url")}`;

/**
 * Rotation: a new secret, answered once (as at create). The previous one goes on signing beside
 * it (a second `v1=` in Holm-Signature) for `graceSecs`, so a receiver can switch to the new
 * secret without refusing a delivery in between; `0` drops it at once (a leaked secret). A second
 * rotation within the window keeps only the secret it replaces: two secrets sign at most. A
 * secret that does not open with this server's key (a store restored without its key) is dropped
 * at once whatever the grace: it can sign nothing, and kept it would fail every delivery.
 */
export async function rotateWebhookSecret(
  owner: string | null | undefined,
  id: string,
  graceSecs: number,
  now = Date.now(),
): Promise<WebhookInfo & { secret: string }> {
  await getWebhook(owner, id);
  const secret = newSecret();
  await db()
    .transaction()
    .execute(async (tx) => {
      // Two rotations at once: the second waits, and keeps the first one's secret as the previous.
      await lockKey(tx, `webhook-rotate:${id}`);
      const row = await tx.selectFrom("webhook").select("sealed_secret").where("owner", "=", ownerKey(owner)).where("id", "=", id).executeTakeFirstOrThrow();
      const keep = graceSecs > 0 && opens(id, row.sealed_secret) !== undefined;
      await tx
        .updateTable("webhook")
        .set({
          sealed_secret: seal("webhooks", secret, where(id)),
          // Still sealed, and bound to the same row: the sealed value moves as it is.
          sealed_previous_secret: keep ? row.sealed_secret : null,
          previous_until_ms: keep ? now + graceSecs * 1000 : null,
          updated_at_ms: now,
        })
        .where("id", "=", id)
        .execute();
    });
  return { ...(await getWebhook(owner, id)), secret };
}

/** A webhook's sealed secret opened, or undefined when it does not open with this server's key. */
function opens(id: string, sealed: string): string | undefined {
  try {
    return unseal("webhooks", sealed, where(id)).toString("utf8");
  } catch {
    return undefined;
  }
}

/**
 * What the sender needs: the URL and the opened secrets that sign now, the current one first
 * (then the previous one while its rotation window lasts). Never leaves the server.
 */
export async function webhookTarget(id: string, now = Date.now()): Promise<{ url: string; secrets: string[]; enabled: boolean } | undefined> {
  const row = await db()
    .selectFrom("webhook")
    .select(["url", "sealed_secret", "sealed_previous_secret", "previous_until_ms", "enabled"])
    .where("id", "=", id)
    .executeTakeFirst();
  if (!row) return undefined;
  const current = opens(id, row.sealed_secret);
  // Sealed under another server key (a store restored without its key): waiting never helps.
  if (current === undefined) throw new ApiError("unavailable", "the webhook's secret does not open with this server's key", { retryable: false });
  const secrets = [current];
  if (row.sealed_previous_secret && row.previous_until_ms !== null && Number(row.previous_until_ms) > now) {
    // A previous secret that does not open (kept by a rotation an earlier version made after such
    // a restore) signs nothing: the current one signs alone rather than the delivery failing.
    const previous = opens(id, row.sealed_previous_secret);
    if (previous !== undefined) secrets.push(previous);
  }
  return { url: row.url, secrets, enabled: row.enabled === 1 };
}

/**
 * The enabled webhooks of an owner key that want `kind`. `q` is the transaction the caller is in:
 * the store has one connection, so a query outside it would wait for the transaction forever.
 */
export async function subscribers(q: Kysely<Database>, owner: string, kind: EventKind): Promise<string[]> {
  const rows = await q.selectFrom("webhook").select(["id", "kinds_json"]).where("owner", "=", owner).where("enabled", "=", 1).execute();
  return rows.filter((r) => {
    const kinds = JSON.parse(r.kinds_json) as string[];
    return kinds.includes("*") || kinds.includes(kind);
  }).map((r) => r.id);
}
