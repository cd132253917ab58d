import { sha256 } from "@oslojs/crypto/sha2";
import { encodeBase32LowerCaseNoPadding, encodeHexLowerCase } from "@oslojs/encoding";
import { randomBytes } from "node:crypto";
import { nameProblem } from "~/protocol/plain-text";
import { ApiError, badRequest, notFound } from "~/utils/api-error.server";
import { newsEpoch, newsLive } from "~/utils/cluster.server";
import { db, lockKey } from "~/utils/db.server";
import { onPrincipalChange, principalChanged } from "./principal-changes.server";
import { log } from "~/utils/log.server";

// API keys `holm_sk_…`: shown once, stored as SHA-256, checked through a short cache so a
// request pays a map lookup, not a query. Revoking clears the entry on every server (the
// `principal` news, docs/decisions/0021), so it bites at once. A server that may have missed that
// news (its Redis subscription is down or came back since the entry was read) asks the store on
// every request instead: a revoked key is refused by the very next call wherever it lands.

export const KEY_PREFIX = "holm_sk_";
const CACHE_TTL_MS = 5_000;
const LAST_USED_EVERY_MS = 60_000;

export interface ApiKey {
  id: string;
  prefix: string;
  name: string;
  workspace_id: string;
  created_by: string;
  created_at_ms: number;
  expires_at_ms: number | null;
  last_used_ms: number | null;
  revoked_at_ms: number | null;
}

interface Cached {
  key: ApiKey | null;
  at: number;
  /** newsEpoch() when read: the entry is trusted only while no news can have been missed since. */
  epoch: number;
}

const cache = new Map<string, Cached>();
const hashKey = (key: string) => encodeHexLowerCase(sha256(new TextEncoder().encode(key)));

function toKey(r: ApiKey): ApiKey {
  return {
    ...r,
    created_at_ms: Number(r.created_at_ms),
    expires_at_ms: r.expires_at_ms === null ? null : Number(r.expires_at_ms),
    last_used_ms: r.last_used_ms === null ? null : Number(r.last_used_ms),
    revoked_at_ms: r.revoked_at_ms === null ? null : Number(r.revoked_at_ms),
  };
}

export async function createKey(input: { workspaceId: string; name: string; createdBy: string; expiresAtMs?: number | null }) {
  const name = input.name.trim();
  if (!name || name.length > 80) throw badRequest("a key name is 1 to 80 characters");
  const problem = nameProblem(name, "a key name");
  if (problem) throw badRequest(problem);
  if (input.expiresAtMs !== undefined && input.expiresAtMs !== null && input.expiresAtMs <= Date.now()) {
    throw badRequest("the expiry must be in the future");
  }
  // A name says which key is which (the Keys page's Revoke buttons, "by key …" in the trace and
  // events), so two usable keys of a workspace never share one. A revoked or expired key's name
  // is free again: that key cannot be used, and an expired one cannot be revoked to free it.
  // Checked and written in one transaction under the workspace's key-name lock: as two
  // statements, creates at once each passed the check and all were written.
  const secret = `${KEY_PREFIX}${encodeBase32LowerCaseNoPadding(randomBytes(30))}`;
  const row = {
    id: `key_${randomBytes(8).toString("hex")}`,
    hash: hashKey(secret),
    prefix: secret.slice(0, KEY_PREFIX.length + 6),
    workspace_id: input.workspaceId,
    name,
    created_by: input.createdBy,
    created_at_ms: Date.now(),
    expires_at_ms: input.expiresAtMs ?? null,
    last_used_ms: null,
    revoked_at_ms: null,
  };
  await db()
    .transaction()
    .execute(async (tx) => {
      await lockKey(tx, `key-name:${input.workspaceId}`);
      const now = Date.now();
      const same = await tx
        .selectFrom("api_key")
        .select("id")
        .where("workspace_id", "=", input.workspaceId)
        .where("name", "=", name)
        .where("revoked_at_ms", "is", null)
        .where((eb) => eb.or([eb("expires_at_ms", "is", null), eb("expires_at_ms", ">", now)]))
        .executeTakeFirst();
      if (same) {
        throw new ApiError("denied", `a key named "${name}" is already active in this workspace; give this one another name, or revoke that one first`, { at: "name" });
      }
      await tx.insertInto("api_key").values(row).execute();
    });
  const { hash: _hash, ...key } = row;
  return { secret, key: key as ApiKey };
}

/** The workspace's keys, newest first, each with its creator's name and email (the id if they are gone). */
export async function listKeys(workspaceId: string): Promise<(ApiKey & { creator: string; creator_email: string | null })[]> {
  const rows = await db()
    .selectFrom("api_key")
    .leftJoin("user", "user.id", "api_key.created_by")
    .select([
      "api_key.id",
      "api_key.prefix",
      "api_key.name",
      "api_key.workspace_id",
      "api_key.created_by",
      "api_key.created_at_ms",
      "api_key.expires_at_ms",
      "api_key.last_used_ms",
      "api_key.revoked_at_ms",
      "user.name as creator",
      "user.email as creator_email",
    ])
    .where("api_key.workspace_id", "=", workspaceId)
    .orderBy("api_key.created_at_ms", "desc")
    .execute();
  return rows.map(({ creator, creator_email, ...r }) => ({ ...toKey(r as ApiKey), creator: creator ?? r.created_by, creator_email }));
}

export async function revokeKey(workspaceId: string, id: string): Promise<void> {
  const res = await db()
    .updateTable("api_key")
    .set({ revoked_at_ms: Date.now() })
    .where("id", "=", id)
    .where("workspace_id", "=", workspaceId)
    .where("revoked_at_ms", "is", null)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) === 0) throw notFound("no such active key in this workspace");
  // Drop every cached entry of this key, so the very next request is refused; its open sockets
  // close; and the other servers do both on the news.
  forget(id);
  // Awaited: when the person sees the key revoked, the other servers have been told.
  await principalChanged({ kind: "key", keyId: id });
}

/** Bumped by each forget(): a store read that a revocation overtook is not cached. */
let forgets = 0;
function forget(keyId: string) {
  forgets++;
  for (const [hash, c] of cache) if (c.key?.id === keyId) cache.delete(hash);
}

// A key revoked on another server (the news arrives here too; this server's own change as well).
onPrincipalChange((change) => {
  if (change.kind === "key") forget(change.keyId);
});

/** A key as the store has it now, by id (no cache): for checking a ticket's issuer at connect. */
export async function keyById(id: string): Promise<ApiKey | undefined> {
  const row = await db()
    .selectFrom("api_key")
    .select(["id", "prefix", "name", "workspace_id", "created_by", "created_at_ms", "expires_at_ms", "last_used_ms", "revoked_at_ms"])
    .where("id", "=", id)
    .executeTakeFirst();
  return row ? toKey(row as ApiKey) : undefined;
}

export type KeyCheck = { ok: true; key: ApiKey } | { ok: false; why: "unknown" | "revoked" | "expired" };

/** Checks a presented key. Cached for a few seconds; revocation clears the cache. */
export async function checkKey(secret: string, now = Date.now()): Promise<KeyCheck> {
  if (!secret.startsWith(KEY_PREFIX) || secret.length > 128) return { ok: false, why: "unknown" };
  const hash = hashKey(secret);
  let hit = cache.get(hash);
  if (!hit || now - hit.at > CACHE_TTL_MS || hit.epoch !== newsEpoch() || !newsLive()) {
    const [epoch, seen] = [newsEpoch(), forgets];
    const row = await db()
      .selectFrom("api_key")
      .select(["id", "prefix", "name", "workspace_id", "created_by", "created_at_ms", "expires_at_ms", "last_used_ms", "revoked_at_ms"])
      .where("hash", "=", hash)
      .executeTakeFirst();
    hit = { key: row ? toKey(row as ApiKey) : null, at: now, epoch };
    if (seen === forgets) cache.set(hash, hit);
    if (cache.size > 10_000) cache.delete(cache.keys().next().value!);
  }
  const key = hit.key;
  if (!key) return { ok: false, why: "unknown" };
  if (key.revoked_at_ms !== null) return { ok: false, why: "revoked" };
  if (key.expires_at_ms !== null && key.expires_at_ms <= now) return { ok: false, why: "expired" };
  if (key.last_used_ms === null || now - key.last_used_ms > LAST_USED_EVERY_MS) {
    key.last_used_ms = now;
    void db()
      .updateTable("api_key")
      .set({ last_used_ms: now })
      .where("id", "=", key.id)
      .execute()
      .catch((err) => log.error({ err }, "key last-used update failed"));
  }
  return { ok: true, key };
}
