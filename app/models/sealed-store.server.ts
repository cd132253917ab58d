import { ApiError, badRequest } from "~/utils/api-error.server";
import { db, lockKey } from "~/utils/db.server";
import { seal, unseal } from "~/utils/seal.server";
import { log } from "~/utils/log.server";

// What a workspace keeps by name, sealed at rest (app/utils/seal.server.ts): its secrets and its
// saved browser states. One owner's names are invisible to every other owner: each query names
// the owner, so another workspace's name is simply not there (404, never 409 or 403).

export type SealedTable = "secrets" | "browser_states";

/** The owner of what the server token keeps (workspace ids start with "ws_"). */
const SERVER_OWNER = "server";

/** The store's owner for a workspace id, or for the server token (null/undefined). */
export function ownerKey(owner: string | null | undefined): string {
  return owner ?? SERVER_OWNER;
}

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

export const isName = (name: string) => NAME.test(name);

/** A name as given, or 400 naming what a name may be. */
export function checkName(what: string, name: string): string {
  if (!isName(name)) {
    throw badRequest(`${what}: a name is 1 to 128 letters, digits, "_", "." or "-", and starts with a letter, digit or "_"`);
  }
  return name;
}

export interface SealedRow {
  name: string;
  created_at_ms: number;
  updated_at_ms: number;
  size: number;
}

// The additional data a value is sealed with: where it is kept.
const where = (table: SealedTable, owner: string, name: string) => `${table}\u0000${owner}\u0000${name}`;

/** Every name of the owner (no values), oldest first. */
export async function listSealed(table: SealedTable, owner: string): Promise<SealedRow[]> {
  const rows = await db()
    .selectFrom(table as "browser_states")
    .select(table === "browser_states" ? ["name", "created_at_ms", "updated_at_ms", "size"] : ["name", "created_at_ms", "updated_at_ms"])
    .where("owner", "=", owner)
    .orderBy("created_at_ms")
    .orderBy("name")
    .execute();
  return rows.map((r) => ({ name: r.name, created_at_ms: Number(r.created_at_ms), updated_at_ms: Number(r.updated_at_ms), size: Number(r.size ?? 0) }));
}

/** Every plain value of the owner (for masking them in answers; never for an answer itself). A value that will not open is left out and logged. */
export async function listSealedValues(table: SealedTable, owner: string): Promise<Buffer[]> {
  const rows = await db().selectFrom(table).select(["name", "sealed"]).where("owner", "=", owner).execute();
  const out: Buffer[] = [];
  for (const row of rows) {
    try {
      out.push(unseal(table, row.sealed, where(table, owner, row.name)));
    } catch (e) {
      log.error(`${table} "${row.name}": ${(e as Error).message}`);
    }
  }
  return out;
}

/** The plain value of one name, or undefined when the owner has none by that name. */
export async function readSealed(table: SealedTable, owner: string, name: string): Promise<Buffer | undefined> {
  const row = await db().selectFrom(table).select("sealed").where("owner", "=", owner).where("name", "=", name).executeTakeFirst();
  if (!row) return undefined;
  try {
    return unseal(table, row.sealed, where(table, owner, name));
  } catch (e) {
    // The message names neither the value nor the key; the operator learns why from the log.
    log.error(`${table} "${name}": ${(e as Error).message}`);
    // Not retryable: a value sealed under another key never opens by waiting.
    throw new ApiError("unavailable", `"${name}" cannot be opened with this server's key`, { retryable: false });
  }
}

/**
 * Stores (or replaces) one name's value, sealed. At most `limit` names per owner: one more is
 * 409 `denied` (replacing a name is always allowed). Check and write are one transaction.
 */
export async function writeSealed(table: SealedTable, owner: string, name: string, plain: Buffer, limit: number): Promise<SealedRow> {
  const now = Date.now();
  const sealed = seal(table, plain, where(table, owner, name));
  return db()
    .transaction()
    .execute(async (tx) => {
      // The count and the insert of one owner's names, one transaction at a time (PostgreSQL).
      await lockKey(tx, `${table}:${owner}`);
      const old = await tx.selectFrom(table).select("created_at_ms").where("owner", "=", owner).where("name", "=", name).executeTakeFirst();
      if (!old) {
        const { n } = await tx
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .where("owner", "=", owner)
          .executeTakeFirstOrThrow();
        if (Number(n) >= limit) {
          throw new ApiError("denied", `this workspace keeps at most ${limit} of these; delete one first`, { retryable: false });
        }
      }
      const size = table === "browser_states" ? { size: plain.length } : {};
      const row = { owner, name, sealed, created_at_ms: now, updated_at_ms: now, ...size };
      await tx
        .insertInto(table as "browser_states")
        .values(row as typeof row & { size: number })
        .onConflict((oc) => oc.columns(["owner", "name"]).doUpdateSet({ sealed, updated_at_ms: now, ...size }))
        .execute();
      return { name, created_at_ms: old ? Number(old.created_at_ms) : now, updated_at_ms: now, size: plain.length };
    });
}

/** Removes one name; false when the owner had none by that name. */
export async function deleteSealed(table: SealedTable, owner: string, name: string): Promise<boolean> {
  const r = await db().deleteFrom(table).where("owner", "=", owner).where("name", "=", name).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}
