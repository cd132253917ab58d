import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { ApiError } from "./api-error.server";
import { env } from "./env.server";
import { log } from "./log.server";

// Several holm servers, one service (docs/decisions/0021). What one server must tell the others
// at once (a takeover taken or given back, access that ended) goes over Redis pub/sub; what must
// hold across servers for a moment (one batch at a time on a screen, a start slot) is a Redis
// key with a lease; and each server says it is alive with a key that lapses, so the others can
// tell an idempotency key cut off by a dead server from one still being answered.
//
// Without HOLM_REDIS_URL there is one server: publishing reaches nobody, locks are this
// process's own (the callers keep their in-process queues first), and only this server is alive.

/** This process, as the other servers know it. */
export const SERVER_ID = randomUUID();

const ALIVE_TTL_MS = 6000;
const ALIVE_EVERY_MS = 2000;
const PREFIX = "holm:";

let pub: Redis | undefined;
let sub: Redis | undefined;
let aliveTimer: NodeJS.Timeout | undefined;
const handlers = new Map<string, Set<(payload: unknown) => void>>();

export function clustered(): boolean {
  return pub !== undefined;
}

function client(url: string, name: string): Redis {
  const r = new Redis(url, { connectionName: `holm-${name}-${SERVER_ID.slice(0, 8)}`, maxRetriesPerRequest: 2, enableAutoPipelining: true });
  // ioredis reconnects by itself; an error event without a listener would end the process.
  r.on("error", (err) => log.error({ err }, `redis (${name})`));
  return r;
}

/** Connects to Redis when HOLM_REDIS_URL is set; the server's boot awaits it. */
export async function openCluster(): Promise<void> {
  const url = env().HOLM_REDIS_URL;
  if (!url || pub) return;
  pub = client(url, "pub");
  sub = client(url, "sub");
  await Promise.all([pub.ping(), sub.psubscribe(`${PREFIX}bus:*`)]);
  sub.on("pmessage", (_pattern, channel, raw) => {
    let msg: { from: string; payload: unknown };
    try {
      msg = JSON.parse(raw);
    } catch {
      return;
    }
    if (msg.from === SERVER_ID) return;
    for (const h of handlers.get(channel.slice(`${PREFIX}bus:`.length)) ?? []) {
      try {
        h(msg.payload);
      } catch (err) {
        log.error({ err }, `handling ${channel} failed`);
      }
    }
  });
  const beat = () => pub!.set(`${PREFIX}alive:${SERVER_ID}`, "1", "PX", ALIVE_TTL_MS).catch(() => undefined);
  await beat();
  aliveTimer = setInterval(beat, ALIVE_EVERY_MS);
  aliveTimer.unref();
}

export async function closeCluster(): Promise<void> {
  clearInterval(aliveTimer);
  const [p, s] = [pub, sub];
  pub = sub = undefined;
  await p?.del(`${PREFIX}alive:${SERVER_ID}`).catch(() => undefined);
  p?.disconnect();
  s?.disconnect();
}

/** Tells the other servers; this one has acted already. Lost news is made up by each reader's own re-reads. */
export function publish(channel: string, payload: unknown): void {
  pub?.publish(`${PREFIX}bus:${channel}`, JSON.stringify({ from: SERVER_ID, payload })).catch((err) =>
    log.error({ err }, `publishing ${channel} failed`),
  );
}

/** Listens to what the other servers publish on `channel`. */
export function onClusterMessage(channel: string, handler: (payload: unknown) => void): void {
  const set = handlers.get(channel) ?? new Set();
  set.add(handler);
  handlers.set(channel, set);
}

/** Two fresh connections for socket.io's Redis adapter, or undefined for one server. */
export function adapterClients(): { pubClient: Redis; subClient: Redis } | undefined {
  if (!pub) return undefined;
  return { pubClient: pub.duplicate(), subClient: pub.duplicate() };
}

/** Whether the server `id` still says it is alive (this one always is). */
export async function serverAlive(id: string): Promise<boolean> {
  if (id === SERVER_ID) return true;
  if (!pub) return false;
  // Redis away: assume it lives (a waiter waits on, rather than running a call twice).
  return (await pub.exists(`${PREFIX}alive:${id}`).catch(() => 1)) === 1;
}

// Deletes or extends the lock only if it is still ours: a lease that ran out may belong to another now.
const RELEASE = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;
const RENEW = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`;
// A lock's lease: its holder renews it while it works, so a server that dies holding one frees it
// within this long, and a live one never loses it to a slow step.
const LOCK_LEASE_MS = 10_000;
const LOCK_RENEW_MS = 3_000;

/**
 * Runs `fn` holding the cluster-wide lock `name` (a Redis key set NX with a lease its holder
 * renews). Waiters poll; order among servers is not kept (each server keeps its own queue in front
 * of this). Without Redis it just runs `fn`.
 */
export function withClusterLock<T>(name: string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  return withClusterSlot(name, 1, fn, signal);
}

/**
 * Runs `fn` holding one of `slots` cluster-wide slots named `name` (at most that many holders on
 * all servers together), each a Redis key with a lease as above. Without Redis it just runs `fn`.
 */
export async function withClusterSlot<T>(name: string, slots: number, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  const r = pub;
  if (!r) return fn();
  const token = `${SERVER_ID}:${randomUUID()}`;
  let key = "";
  for (let wait = 2; !key; wait = Math.min(wait * 2, 50)) {
    for (let i = 0; i < slots && !key; i++) {
      const k = `${PREFIX}lock:${name}:${i}`;
      const got = await r.set(k, token, "PX", LOCK_LEASE_MS, "NX").catch((err: Error) => {
        throw new ApiError("unavailable", `the servers' shared lock (Redis) did not answer: ${err.message}`, { retryable: true });
      });
      if (got === "OK") key = k;
    }
    if (key) break;
    signal?.throwIfAborted();
    await new Promise((res) => setTimeout(res, wait));
  }
  const renew = setInterval(() => {
    r.eval(RENEW, 1, key, token, String(LOCK_LEASE_MS)).catch((err) => log.error({ err }, `renewing ${key} failed`));
  }, LOCK_RENEW_MS);
  renew.unref();
  try {
    return await fn();
  } finally {
    clearInterval(renew);
    await r.eval(RELEASE, 1, key, token).catch((err) => log.error({ err }, `releasing ${key} failed (its lease ends it)`));
  }
}

// Counts each server keeps of its own (viewers on a screen), summed across the live servers: a
// hash per name, one field per server, each server's field written when its count changes and
// read only while that server is alive.
const COUNTS_TTL_MS = 24 * 3600 * 1000;

/** Sets this server's share of the counts `name` (a field in a Redis hash; none without Redis). */
export function shareCounts(name: string, counts: number[]): void {
  const r = pub;
  if (!r) return;
  const key = `${PREFIX}counts:${name}`;
  const write = counts.every((n) => n === 0) ? r.hdel(key, SERVER_ID) : r.hset(key, SERVER_ID, counts.join(",")).then(() => r.pexpire(key, COUNTS_TTL_MS));
  write.catch((err: Error) => log.error({ err }, `sharing ${key} failed`));
}

/** The counts `name` of every live server but this one, summed (zeros without Redis). */
export async function othersCounts(name: string, width: number): Promise<number[]> {
  const sum = new Array<number>(width).fill(0);
  const r = pub;
  if (!r) return sum;
  const all = await r.hgetall(`${PREFIX}counts:${name}`).catch(() => ({}) as Record<string, string>);
  const others = Object.entries(all).filter(([id]) => id !== SERVER_ID);
  const alive = await Promise.all(others.map(([id]) => serverAlive(id)));
  others.forEach(([, v], i) => {
    if (!alive[i]) return;
    v.split(",").forEach((n, j) => (sum[j] = (sum[j] ?? 0) + (Number(n) || 0)));
  });
  return sum;
}
