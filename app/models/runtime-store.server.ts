import { z } from "zod";
import { DEFAULT_RUNTIME, localDocker, runtime, useStoredRuntime } from "~/runtime/index.server";
import { type Capabilities, type Fields, LOCAL_DOCKER_CAN, type Secrets, provider } from "~/runtime/provider.server";
import type { Runtime } from "~/runtime/runtime";
import { ApiError, badRequest, notFound, unsupported } from "~/utils/api-error.server";
import { db } from "~/utils/db.server";
import { env } from "~/utils/env.server";
import { seal, unseal } from "~/utils/seal.server";
import type { Actor } from "./actor";
import { isName } from "./sealed-store.server";
import { getUser } from "./user.server";
import { log } from "~/utils/log.server";

// Runtimes (seed 000, "Runtimes and images"; ADR 0017): the built-in `docker` (this machine's
// engine, from the environment, never stored) and the ones the operator added, kept in the store
// with their secrets sealed as one value. A secret's value goes into the store sealed and comes
// out only for the provider; never into an answer, an event, an error message or a log line.

const NAME_RULE = '1 to 64 letters, digits, "_", "." or "-", starting with a letter, digit or "_"';
const RuntimeName = z.string().max(64).refine(isName, NAME_RULE);
const SecretValue = z.string().min(1, "a secret is not empty").max(16 * 1024);

export const RuntimeCreateSchema = z.strictObject({
  name: RuntimeName,
  provider: z.string().min(1).max(64),
  fields: z.record(z.string(), z.unknown()).optional(),
  secrets: z.record(z.string(), SecretValue).optional(),
});

export const RuntimePatchSchema = z.strictObject({
  fields: z.record(z.string(), z.unknown()).optional(),
  /** A name set to null removes that secret. */
  secrets: z.record(z.string(), SecretValue.nullable()).optional(),
});

export interface RuntimeJson {
  name: string;
  provider: string;
  /** The runtime a box gets when its placement names none. */
  default: boolean;
  /** Configured by the server's environment; not changed or removed through /v1. */
  builtin: boolean;
  fields: Fields;
  /** The names of the secrets set: never their values. */
  secrets_set: string[];
  can: Capabilities;
  /** Why this server does not launch boxes there, when it does not. */
  reason?: string;
  created_at_ms?: number;
  updated_at_ms?: number;
}

const SEAL_PURPOSE = "runtime-secrets";
// The sealed value is bound to its runtime's name: a row copied under another name does not open.
const where = (name: string) => `runtime\u0000${name}`;

function builtin(): RuntimeJson {
  return {
    name: DEFAULT_RUNTIME,
    provider: "docker",
    default: true,
    builtin: true,
    fields: { host: `unix://${env().HOLM_DOCKER_SOCKET}` },
    secrets_set: [],
    can: LOCAL_DOCKER_CAN,
  };
}

type Row = { name: string; provider: string; fields_json: string; secret_names: string; created_at_ms: number; updated_at_ms: number };

function toJson(row: Row): RuntimeJson {
  const fields = JSON.parse(row.fields_json) as Fields;
  const p = provider(row.provider);
  const reason = p.notLaunchable(fields);
  return {
    name: row.name,
    provider: row.provider,
    default: false,
    builtin: false,
    fields,
    secrets_set: JSON.parse(row.secret_names) as string[],
    can: p.can(fields),
    ...(reason ? { reason } : {}),
    created_at_ms: Number(row.created_at_ms),
    updated_at_ms: Number(row.updated_at_ms),
  };
}

const COLUMNS = ["name", "provider", "fields_json", "secret_names", "created_at_ms", "updated_at_ms"] as const;

async function storedRow(name: string): Promise<Row | undefined> {
  return db().selectFrom("runtime").select(COLUMNS).where("name", "=", name).executeTakeFirst();
}

export async function listRuntimes(): Promise<RuntimeJson[]> {
  const rows = await db().selectFrom("runtime").select(COLUMNS).orderBy("name").execute();
  return [builtin(), ...rows.map(toJson)];
}

/** One runtime, or 404 `not_found` (000: "No such box, runtime, or object"). */
export async function getRuntime(name: string): Promise<RuntimeJson> {
  if (name === DEFAULT_RUNTIME) return builtin();
  const row = isName(name) ? await storedRow(name) : undefined;
  if (!row) throw notFound(`no runtime named "${name}"`);
  return toJson(row);
}

/**
 * Who may add, change or remove runtimes: the server token, or a person who administers the
 * server. A runtime is the server's, shared by every workspace (README, "Runtimes").
 */
export async function requireRuntimeAdmin(actor: Actor): Promise<void> {
  if (actor.kind === "server") return;
  if (actor.via === "session" && actor.userId && (await getUser(actor.userId))?.is_admin) return;
  throw new ApiError("denied", "runtimes are the server's: only the server token or the server's administrator changes them");
}

function refuseBuiltin(name: string): void {
  if (name === DEFAULT_RUNTIME) {
    throw new ApiError("denied", `"${DEFAULT_RUNTIME}" is the built-in runtime (this machine's engine, HOLM_DOCKER_SOCKET); it is not changed or removed through /v1`);
  }
}

/** 409 `denied` while a box that is not removed names the runtime (000: "Refused while a box uses it"). */
async function refuseWhileUsed(name: string, doing: string): Promise<void> {
  const used = await db()
    .selectFrom("box")
    .select("id")
    .where("runtime", "=", name)
    .where("removed_at_ms", "is", null)
    .limit(1)
    .executeTakeFirst();
  if (used) throw new ApiError("denied", `runtime "${name}" is used by box ${used.id}; remove its boxes before you ${doing} it`);
}

function sealSecrets(name: string, secrets: Secrets): { sealed: string | null; secret_names: string } {
  const names = Object.keys(secrets).sort();
  return {
    sealed: names.length ? seal(SEAL_PURPOSE, JSON.stringify(secrets), where(name)) : null,
    secret_names: JSON.stringify(names),
  };
}

async function storedSecrets(name: string): Promise<Secrets> {
  const row = await db().selectFrom("runtime").select("sealed").where("name", "=", name).executeTakeFirst();
  if (!row?.sealed) return {};
  try {
    return JSON.parse(unseal(SEAL_PURPOSE, row.sealed, where(name)).toString("utf8")) as Secrets;
  } catch (e) {
    log.error(`runtime "${name}": ${(e as Error).message}`);
    // Not retryable: secrets sealed under another key never open by waiting.
    throw new ApiError("unavailable", `the secrets of runtime "${name}" cannot be opened with this server's key`, { retryable: false });
  }
}

export async function createRuntime(input: z.infer<typeof RuntimeCreateSchema>): Promise<RuntimeJson> {
  const p = provider(input.provider);
  if (input.name === DEFAULT_RUNTIME) throw new ApiError("denied", `"${DEFAULT_RUNTIME}" is the built-in runtime's name`);
  const secrets = input.secrets ?? {};
  const fields = p.check(input.fields ?? {}, secrets);
  // Opened before the row is written: a runtime that cannot be opened is not stored.
  const opened = openOnly(input.name, p.name, fields, secrets);
  const now = Date.now();
  const row = { name: input.name, provider: p.name, fields_json: JSON.stringify(fields), ...sealSecrets(input.name, secrets), created_at_ms: now, updated_at_ms: now };
  const done = await db()
    .insertInto("runtime")
    .values(row)
    .onConflict((oc) => oc.column("name").doNothing())
    .executeTakeFirst()
    .catch((err: unknown) => {
      dispose(opened);
      throw err;
    });
  if (Number(done.numInsertedOrUpdatedRows ?? 0) === 0) {
    dispose(opened);
    throw new ApiError("denied", `a runtime named "${input.name}" exists; change it with PATCH or remove it first`);
  }
  useStoredRuntime(row.name, opened);
  return toJson(row);
}

export async function patchRuntime(name: string, input: z.infer<typeof RuntimePatchSchema>): Promise<RuntimeJson> {
  refuseBuiltin(name);
  const row = isName(name) ? await storedRow(name) : undefined;
  if (!row) throw notFound(`no runtime named "${name}"`);
  await refuseWhileUsed(name, "change");
  const p = provider(row.provider);
  const fields = { ...(JSON.parse(row.fields_json) as Fields), ...input.fields };
  const secrets: Secrets = await storedSecrets(name);
  for (const [k, v] of Object.entries(input.secrets ?? {})) {
    if (v === null) delete secrets[k];
    else secrets[k] = v;
  }
  const checked = p.check(fields, secrets);
  // Opened before the write: a change that cannot be opened leaves the runtime as it was.
  const opened = openOnly(name, p.name, checked, secrets);
  const now = Date.now();
  const next = { fields_json: JSON.stringify(checked), ...sealSecrets(name, secrets), updated_at_ms: now };
  await db()
    .updateTable("runtime")
    .set(next)
    .where("name", "=", name)
    .execute()
    .catch((err: unknown) => {
      dispose(opened);
      throw err;
    });
  // The old client (its secrets, its listeners) goes; the next use dials with the new settings.
  useStoredRuntime(name, opened);
  return toJson({ ...row, ...next });
}

export async function deleteRuntime(name: string): Promise<{ name: string; deleted: true }> {
  refuseBuiltin(name);
  if (!isName(name) || !(await storedRow(name))) throw notFound(`no runtime named "${name}"`);
  await refuseWhileUsed(name, "remove");
  await db().deleteFrom("runtime").where("name", "=", name).execute();
  useStoredRuntime(name, undefined);
  return { name, deleted: true };
}

/**
 * Refuses a launch on `name` unless this server launches there: 404 for a name no runtime has,
 * 400 `unsupported` for an added runtime this server cannot launch on yet.
 */
export async function requireLaunchable(name: string): Promise<void> {
  if (runtime(name)) return;
  const row = isName(name) ? await storedRow(name) : undefined;
  if (!row) throw notFound(`no runtime named "${name}"; GET /v1/runtimes lists them`);
  const fields = JSON.parse(row.fields_json) as Fields;
  const why = provider(row.provider).notLaunchable(fields);
  if (why) throw unsupported(`runtime "${name}": ${why}`);
  // Added by another server sharing the store, or not opened at boot: opened now.
  openRuntime(name, row.provider, fields, await storedSecrets(name));
  if (!runtime(name)) throw unsupported(`runtime "${name}": this server cannot launch boxes there`);
}

/** Opens a stored runtime this server launches on and registers it; drops it otherwise. */
function openRuntime(name: string, providerName: string, fields: Fields, secrets: Secrets): void {
  useStoredRuntime(name, openOnly(name, providerName, fields, secrets));
}

/**
 * The Runtime for these settings, not registered (undefined when this server does not launch
 * there). What the provider's client refuses is a 400: its checks should have caught it first.
 */
function openOnly(name: string, providerName: string, fields: Fields, secrets: Secrets): Runtime | undefined {
  const p = provider(providerName);
  const local = localDocker();
  if (p.notLaunchable(fields) || !local) return undefined;
  try {
    return p.open(name, fields, secrets, local);
  } catch (err) {
    if (err instanceof ApiError) throw err;
    // The client's own words (such as "Invalid URL"), never a secret's value.
    throw badRequest(`fields.host: runtime "${name}" cannot be opened with these settings: ${(err as Error).message}`);
  }
}

/** Lets go of a Runtime opened for a change that was not stored (its client, its SSH connections). */
function dispose(rt: Runtime | undefined): void {
  (rt as { dispose?: () => Promise<void> } | undefined)?.dispose?.().catch(() => undefined);
}

/**
 * At boot, before boxes are taken back: opens every stored runtime this server launches on, so
 * the boxes on them are found again (their addresses and tunnels come back on `inspect`).
 */
export async function openStoredRuntimes(): Promise<number> {
  let opened = 0;
  for (const row of await db().selectFrom("runtime").select(COLUMNS).execute()) {
    try {
      const fields = JSON.parse(row.fields_json) as Fields;
      if (provider(row.provider).notLaunchable(fields)) continue;
      openRuntime(row.name, row.provider, fields, await storedSecrets(row.name));
      opened++;
    } catch (err) {
      // The message names the runtime, never a secret (storedSecrets logs its own).
      log.error(`runtime "${row.name}" could not be opened: ${(err as Error).message}`);
    }
  }
  return opened;
}
