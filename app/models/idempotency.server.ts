import { createHash } from "node:crypto";
import { badRequest } from "~/utils/api-error.server";

// "The server keeps keys in memory" (seed 000). A key remembers its first result for a day.
// This is the memory; app/edge/idempotency.server.ts turns a result into the HTTP answer.
const TTL_MS = 24 * 3600 * 1000;
const MAX_KEYS = 10_000;

/** What a route answered the first time: its status, body and headers. */
export interface Outcome {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

interface Remembered {
  bodyHash: string;
  at: number;
  result: Promise<Outcome>;
}

const remembered = new Map<string, Remembered>();

export function hashBody(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

function sweep(now: number) {
  for (const [k, v] of remembered) {
    if (now - v.at > TTL_MS || remembered.size > MAX_KEYS) remembered.delete(k);
    else break; // insertion order: the rest is newer
  }
}

/**
 * Runs `work` once per (scope, key). The same key with the same body gets the first outcome,
 * also while the first call is still running (`replayed`); another body is refused. A first
 * call that failed with an error is forgotten so the caller can try again.
 */
export async function once(scope: string, key: string | null, body: string, work: () => Promise<Outcome>): Promise<{ outcome: Outcome; replayed: boolean }> {
  if (key === null) return { outcome: await work(), replayed: false };
  if (key.length === 0 || key.length > 255) throw badRequest("idempotency-key must be 1 to 255 characters");
  const now = Date.now();
  sweep(now);
  const id = `${scope}\u0000${key}`;
  const bodyHash = hashBody(body);
  const seen = remembered.get(id);
  if (seen) {
    if (seen.bodyHash !== bodyHash) throw badRequest("this idempotency-key was already used with a different body");
    return { outcome: await seen.result, replayed: true };
  }
  const result = work();
  remembered.set(id, { bodyHash, at: now, result });
  result.catch(() => remembered.delete(id));
  return { outcome: await result, replayed: false };
}
