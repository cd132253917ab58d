import { ApiError, badRequest, notFound } from "~/utils/api-error.server";
import { onClusterMessage, publish } from "~/utils/cluster.server";
import { checkName, deleteSealed, isName, listSealed, listSealedValues, ownerKey, readSealed, writeSealed } from "./sealed-store.server";

// A workspace's named secrets (seed 004, "Typing secrets"), sealed at rest and write-only: /v1
// and the console set, list (names and dates) and delete them; only the server reads a value,
// to type it into a box (`secret_ref` of `fill` and `type`). A value never goes into an answer,
// an error message or a log line: messages name the secret, never its value.

/** Names a workspace may keep. */
export const SECRETS_PER_OWNER = 500;
/** The longest value, in characters. */
export const SECRET_MAX_CHARS = 64 * 1024;

export interface SecretInfo {
  name: string;
  created_at_ms: number;
  updated_at_ms: number;
}

/** The value of a secret of `owner` (a workspace id; null: the server token's own). */
export async function secretValue(owner: string | null | undefined, name: string): Promise<string> {
  // 004: "a name that is not attached returns 400".
  const value = isName(name) ? await readSealed("secrets", ownerKey(owner), name) : undefined;
  if (!value) throw new ApiError("bad_request", `no secret named "${name}"`);
  return value.toString("utf8");
}

/** The owner's secrets: names and dates, never values. */
export async function listSecrets(owner: string | null | undefined): Promise<SecretInfo[]> {
  return (await listSealed("secrets", ownerKey(owner))).map(({ name, created_at_ms, updated_at_ms }) => ({ name, created_at_ms, updated_at_ms }));
}

/** Sets (or replaces) a secret; the answer has its name and dates, not its value. */
export async function putSecret(owner: string | null | undefined, name: string, value: string): Promise<SecretInfo> {
  checkName("secret", name);
  if (value.length === 0) throw badRequest("value: a secret's value is not empty", "value");
  if (value.length > SECRET_MAX_CHARS) throw badRequest(`value: a secret's value is at most ${SECRET_MAX_CHARS} characters`, "value");
  const row = await writeSealed("secrets", ownerKey(owner), name, Buffer.from(value, "utf8"), SECRETS_PER_OWNER);
  changed(owner);
  return { name: row.name, created_at_ms: row.created_at_ms, updated_at_ms: row.updated_at_ms };
}

/** Deletes a secret; 404 when the owner has none by that name. */
export async function deleteSecret(owner: string | null | undefined, name: string): Promise<{ name: string; deleted: true }> {
  checkName("secret", name);
  if (!(await deleteSealed("secrets", ownerKey(owner), name))) throw notFound(`no secret named "${name}"`);
  changed(owner);
  return { name, deleted: true };
}

// Every value of an owner, kept a while for masking answers (secret-mask.server.ts): read once,
// then again after a change here or on another server (ADR 0021's news), or after VALUES_TTL_MS
// in case the news was lost.
const VALUES_TTL_MS = 30_000;
const values = new Map<string, { at: number; values: Promise<readonly string[]> }>();

function changed(owner: string | null | undefined) {
  values.delete(ownerKey(owner));
  publish("secrets", { owner: ownerKey(owner) });
}

onClusterMessage("secrets", (p) => {
  const owner = (p as { owner?: unknown } | null)?.owner;
  if (typeof owner === "string") values.delete(owner);
});

/** Every value of the owner's secrets: only to take them out of answers, never to give one. */
export function secretValues(owner: string | null | undefined): Promise<readonly string[]> {
  const key = ownerKey(owner);
  const now = Date.now();
  const kept = values.get(key);
  if (kept && now - kept.at < VALUES_TTL_MS) return kept.values;
  const read = listSealedValues("secrets", key).then((bufs) => bufs.map((b) => b.toString("utf8")));
  values.set(key, { at: now, values: read });
  // A failed read is not kept: the next answer reads again.
  read.catch(() => values.get(key)?.values === read && values.delete(key));
  return read;
}
