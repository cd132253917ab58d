import { createHash } from "node:crypto";
import { ApiError, badRequest } from "~/utils/api-error.server";
import { REDIS_AWAY, SERVER_ID, serverAlive } from "~/utils/cluster.server";
import { db } from "~/utils/db.server";

// Seed 000 has the server keep idempotency keys in memory; several servers (docs/decisions/0021)
// need one memory, so the keys are in the store: a retry that lands on another server, or comes
// after the first server died, gets the first answer. A key remembers its first result for a day.
// This is the memory; app/edge/idempotency.server.ts turns a result into the HTTP answer.
const TTL_MS = 24 * 3600 * 1000;
const SWEEP_EVERY_MS = 60_000;
// How often a second call asks whether the first one (on another server) has answered yet.
const POLL_MS = 25;
// How long a second call waits while it cannot tell whether the first one's server lives (Redis
// away, or just back and not yet heard from every server) before it answers 503 to be retried.
// Longer than Redis's rejoin grace (app/utils/cluster.server.ts), so a restart of Redis alone
// makes a wait, not a refusal.
const UNKNOWN_FOR_MS = 10_000;

/** What a route answered the first time: its status, body and headers. */
export interface Outcome {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** The calls this server is answering now: a second call here waits on the first without polling. */
const running = new Map<string, { bodyHash: string; result: Promise<Outcome> }>();
let sweptAt = 0;

export function hashBody(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

async function sweep(now: number) {
  if (now - sweptAt < SWEEP_EVERY_MS) return;
  sweptAt = now;
  await db().deleteFrom("idempotency").where("at_ms", "<", now - TTL_MS).execute();
}

async function claim(id: string, bodyHash: string, now: number): Promise<boolean> {
  const r = await db()
    .insertInto("idempotency")
    .values({ id, body_hash: bodyHash, at_ms: now, server_id: SERVER_ID, outcome: null })
    .onConflict((oc) => oc.column("id").doNothing())
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) === 1;
}

const differentBody = () => badRequest("this idempotency-key was already used with a different body");

/**
 * Runs `work` once per (scope, key). The same key with the same body gets the first outcome,
 * also while the first call is still running, here or on another server (`replayed`); another
 * body is refused. A first call that failed with an error is forgotten so the caller can try
 * again, and so is one whose server died before it answered.
 */
export async function once(scope: string, key: string | null, body: string, work: () => Promise<Outcome>): Promise<{ outcome: Outcome; replayed: boolean }> {
  if (key === null) return { outcome: await work(), replayed: false };
  if (key.length === 0 || key.length > 255) throw badRequest("idempotency-key must be 1 to 255 characters");
  const now = Date.now();
  await sweep(now);
  const id = hashBody(`${scope}\u0000${key}`);
  const bodyHash = hashBody(body);
  let unknownSince: number | undefined;
  for (;;) {
    const here = running.get(id);
    if (here) {
      if (here.bodyHash !== bodyHash) throw differentBody();
      return { outcome: await here.result, replayed: true };
    }
    if (await claim(id, bodyHash, Date.now())) {
      const result = work();
      running.set(id, { bodyHash, result });
      try {
        const outcome = await result;
        await db().updateTable("idempotency").set({ outcome: JSON.stringify(outcome) }).where("id", "=", id).execute();
        return { outcome, replayed: false };
      } catch (err) {
        await db().deleteFrom("idempotency").where("id", "=", id).where("server_id", "=", SERVER_ID).where("outcome", "is", null).execute();
        throw err;
      } finally {
        running.delete(id);
      }
    }
    const row = await db().selectFrom("idempotency").select(["body_hash", "server_id", "outcome"]).where("id", "=", id).executeTakeFirst();
    if (!row) continue; // the first call failed and was forgotten: claim it
    if (row.body_hash !== bodyHash) throw differentBody();
    if (row.outcome !== null) return { outcome: JSON.parse(row.outcome) as Outcome, replayed: true };
    const alive = row.server_id === SERVER_ID ? "alive" : await serverAlive(row.server_id);
    if (alive === "dead") {
      // Its server died before it answered: the call is forgotten, and this one makes it.
      await db().deleteFrom("idempotency").where("id", "=", id).where("server_id", "=", row.server_id).where("outcome", "is", null).execute();
      continue;
    }
    if (alive === "unknown") {
      unknownSince ??= Date.now();
      // Neither wait forever nor run the call a second time: the caller retries later.
      if (Date.now() - unknownSince > UNKNOWN_FOR_MS) throw new ApiError("unavailable", `${REDIS_AWAY} (whether the first call with this idempotency-key is still running cannot be told)`, { retryable: true });
    } else unknownSince = undefined;
    await new Promise((res) => setTimeout(res, POLL_MS));
  }
}
