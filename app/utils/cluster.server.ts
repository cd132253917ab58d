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

// A Redis that (re)started holds none of the keys the live servers had set: their alive keys and
// lock leases come back only at their next heartbeat or renewal, which every live server makes
// within a few seconds of reconnecting (ioredis retries at least every 2 s; beats every 2 s and
// at once on reconnect; renewals every 3 s). Until Redis has been up this long, a missing key
// proves nothing: no server is declared dead by it and no lock is granted over it.
const REJOIN_GRACE_MS = 8_000;
/** When the Redis this server talks to started, as it last said (INFO uptime), or when this server last (re)connected. */
let redisUpSince = 0;
/** Bumped each time the subscriber's connection drops or comes back: news may have been missed. */
let epoch = 0;
// No Redis call waits longer than this: an unreachable Redis is an answer, not a hang.
const REDIS_CALL_MS = 1_500;

/** The message a person or agent sees when Redis is away; ioredis's own text goes to the log. */
export const REDIS_AWAY = "the cluster's Redis is not reachable; try again shortly";

/**
 * `r`'s answer to `call`, refused at once when `r` is not connected (ioredis would queue it until
 * its retries ran out, seconds later, and a console form makes several such calls in a row), and
 * after REDIS_CALL_MS when Redis takes longer.
 */
function ask<T>(r: Redis, call: (r: Redis) => Promise<T>): Promise<T> {
  if (r.status !== "ready") return Promise.reject(new Error(`the Redis connection is ${r.status}`));
  return bounded(call(r));
}

/** `p`, or a rejection after REDIS_CALL_MS. */
function bounded<T>(p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`Redis did not answer within ${REDIS_CALL_MS} ms`)), REDIS_CALL_MS)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

async function readUptime(r: Redis): Promise<void> {
  try {
    const info = await bounded(r.info("server"));
    const secs = Number(/uptime_in_seconds:(\d+)/.exec(info)?.[1] ?? "0");
    // Whole seconds: count the start a second later than it may have been (the grace errs long).
    redisUpSince = Date.now() - Math.max(0, secs - 1) * 1000;
  } catch (err) {
    log.warn({ err }, "redis uptime not read");
  }
}

/** Whether Redis has been up long enough that every live server's keys are back in it. */
function settled(): boolean {
  return redisUpSince > 0 && Date.now() - redisUpSince >= REJOIN_GRACE_MS;
}

/**
 * Increases whenever this server may have missed news from the others (its subscription dropped
 * or came back). A cache kept because news would clear it is good only within one epoch, and
 * only while `newsLive()`.
 */
export function newsEpoch(): number {
  return epoch;
}

/** Whether news from the other servers reaches this one now (always, for one server). */
export function newsLive(): boolean {
  return !sub || sub.status === "ready";
}

export function clustered(): boolean {
  return pub !== undefined;
}

/**
 * `call` on the shared Redis (bounded and refused at once while it is away, as every call here),
 * or undefined for one server. For a record every server reads, kept with a TTL (an MCP session's).
 */
export function onSharedRedis<T>(call: (r: Redis) => Promise<T>): Promise<T> | undefined {
  return pub ? ask(pub, call) : undefined;
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
  sub.on("close", () => epoch++);
  sub.on("ready", () => epoch++);
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
  const beat = () => pub?.set(`${PREFIX}alive:${SERVER_ID}`, "1", "PX", ALIVE_TTL_MS).catch(() => undefined);
  // Until Redis says how long it has been up, count from now (and from each reconnect).
  redisUpSince = Date.now();
  pub.on("close", () => (redisUpSince = Date.now()));
  await Promise.all([beat(), readUptime(pub)]);
  aliveTimer = setInterval(beat, ALIVE_EVERY_MS);
  aliveTimer.unref();
  // Back from an outage (maybe a restarted, empty Redis): say at once that this one lives, and
  // learn how long Redis has been up.
  pub.on("ready", () => void Promise.all([beat(), pub && readUptime(pub)]));
}

export async function closeCluster(): Promise<void> {
  clearInterval(aliveTimer);
  const [p, s] = [pub, sub];
  pub = sub = undefined;
  await p?.del(`${PREFIX}alive:${SERVER_ID}`).catch(() => undefined);
  p?.disconnect();
  s?.disconnect();
}

/**
 * Tells the other servers; this one has acted already. Lost news is made up by each reader's own
 * re-reads. The promise (which never rejects, and ends within REDIS_CALL_MS) is for a caller that
 * wants the news out before it answers.
 */
export function publish(channel: string, payload: unknown): Promise<void> {
  if (!pub) return Promise.resolve();
  return ask(pub, (r) => r.publish(`${PREFIX}bus:${channel}`, JSON.stringify({ from: SERVER_ID, payload }))).then(
    () => undefined,
    (err) => log.error({ err }, `publishing ${channel} failed`),
  );
}

/** Listens to what the other servers publish on `channel`. */
export function onClusterMessage(channel: string, handler: (payload: unknown) => void): void {
  const set = handlers.get(channel) ?? new Set();
  set.add(handler);
  handlers.set(channel, set);
}

/**
 * Two fresh connections for socket.io's Redis adapter, or undefined for one server. The adapter
 * publishes a room's emit without catching its failure: with Redis away that rejection would be
 * unhandled and end the process. Here a failed publish is logged and counts as reaching nobody
 * (the console's live views miss that news; its pages still answer and re-read on load).
 */
export function adapterClients(): { pubClient: Redis; subClient: Redis } | undefined {
  if (!pub) return undefined;
  const [pubClient, subClient] = [pub.duplicate(), pub.duplicate()];
  for (const [r, name] of [[pubClient, "adapter pub"], [subClient, "adapter sub"]] as const) {
    r.on("error", (err) => log.warn({ err }, `redis (${name})`));
  }
  const publishRaw = pubClient.publish.bind(pubClient) as (channel: string, message: string | Buffer) => Promise<number>;
  pubClient.publish = ((channel: string, message: string | Buffer) =>
    ask(pubClient, () => publishRaw(channel, message)).catch((err: Error) => {
      log.warn({ err }, "socket.io news not published: the cluster's Redis is not reachable");
      return 0;
    })) as Redis["publish"];
  return { pubClient, subClient };
}

/**
 * Whether the server `id` still says it is alive (this one always is). `unknown` while Redis does
 * not answer, and while a Redis that just (re)started may not have heard from it yet: a caller
 * must not act as if it were dead then (that could run a call twice), nor wait forever.
 */
export async function serverAlive(id: string): Promise<"alive" | "dead" | "unknown"> {
  if (id === SERVER_ID) return "alive";
  if (!pub) return "dead";
  try {
    if ((await ask(pub, (r) => r.exists(`${PREFIX}alive:${id}`))) === 1) return "alive";
  } catch (err) {
    log.warn({ err }, "redis: liveness not read");
    return "unknown";
  }
  return settled() ? "dead" : "unknown";
}

// Deletes or extends the lock only if it is still ours: a lease that ran out may belong to another now.
const RELEASE = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;
// Renewing also sets the lease again when it is gone: Redis restarted empty under its holder
// (a lease taken by another meanwhile is left alone).
const RENEW = `local v = redis.call("get", KEYS[1])
if v == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2])
elseif not v then return redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2]) and 1 or 0
else return 0 end`;
// A lock's lease: its holder renews it while it works, so a server that dies holding one frees it
// within this long, and a live one never loses it to a slow step.
const LOCK_LEASE_MS = 10_000;
const LOCK_RENEW_MS = 3_000;
const LOCK_AWAY_MS = 3_000;

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
  let awaySince: number | undefined;
  for (let wait = 2; !key; wait = Math.min(wait * 2, 50)) {
    // A Redis that just came back may not hold the leases of live holders yet: wait until it does.
    for (let i = 0; i < slots && !key && r.status === "ready" && settled(); i++) {
      const k = `${PREFIX}lock:${name}:${i}`;
      const got = await ask(r, (c) => c.set(k, token, "PX", LOCK_LEASE_MS, "NX")).catch((err: Error) => {
        log.warn({ err }, `redis: lock ${k} not taken`);
        throw new ApiError("unavailable", REDIS_AWAY, { retryable: true });
      });
      if (got === "OK") key = k;
    }
    // Redis away: wait a moment for it (a reconnect takes up to 2 s), then refuse, to be retried.
    if (r.status !== "ready") awaySince ??= Date.now();
    else awaySince = undefined;
    if (!key && awaySince !== undefined && Date.now() - awaySince > LOCK_AWAY_MS) throw new ApiError("unavailable", REDIS_AWAY, { retryable: true });
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
    await ask(r, (c) => c.eval(RELEASE, 1, key, token)).catch((err) => log.error({ err }, `releasing ${key} failed (its lease ends it)`));
  }
}

// A fixed window counted across servers (rate-limit.server.ts): the first hit of a window sets
// its lapse, so the key goes away by itself; PTTL is the wait a refused caller is told.
const WINDOW_HIT = `local n = redis.call("incr", KEYS[1])
if n == 1 or redis.call("pttl", KEYS[1]) < 0 then redis.call("pexpire", KEYS[1], ARGV[1]) end
return {n, redis.call("pttl", KEYS[1])}`;
// Giving one back never goes below zero nor outlives the window (DECR keeps the lapse).
const WINDOW_UNHIT = `local n = tonumber(redis.call("get", KEYS[1]) or "0")
if n > 0 then return redis.call("decr", KEYS[1]) else return 0 end`;

/**
 * Counts one hit in the window `name` shared by every server: the count so far and the ms left
 * in the window. Undefined without Redis (one server: the caller counts in memory); rejects
 * when Redis does not answer.
 */
export async function windowHit(name: string, windowMs: number): Promise<{ count: number; leftMs: number } | undefined> {
  const r = pub;
  if (!r) return undefined;
  const [count, left] = (await ask(r, (c) => c.eval(WINDOW_HIT, 1, `${PREFIX}rate:${name}`, String(windowMs)))) as [number, number];
  return { count, leftMs: left > 0 ? left : windowMs };
}

/** Takes back one hit of the shared window `name` (false without Redis); rejects when Redis does not answer. */
export async function windowUnhit(name: string, forget = false): Promise<boolean> {
  const r = pub;
  if (!r) return false;
  const key = `${PREFIX}rate:${name}`;
  await ask(r, (c) => (forget ? c.del(key) : c.eval(WINDOW_UNHIT, 1, key)));
  return true;
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
  const write = ask(r, (c) => (counts.every((n) => n === 0) ? c.hdel(key, SERVER_ID) : c.hset(key, SERVER_ID, counts.join(",")).then(() => c.pexpire(key, COUNTS_TTL_MS))));
  write.catch((err: Error) => log.error({ err }, `sharing ${key} failed`));
}

/** The counts `name` of every live server but this one, summed (zeros without Redis). */
export async function othersCounts(name: string, width: number): Promise<number[]> {
  const sum = new Array<number>(width).fill(0);
  const r = pub;
  if (!r) return sum;
  const all = await ask(r, (c) => c.hgetall(`${PREFIX}counts:${name}`)).catch(() => ({}) as Record<string, string>);
  const others = Object.entries(all).filter(([id]) => id !== SERVER_ID);
  const alive = await Promise.all(others.map(([id]) => serverAlive(id)));
  others.forEach(([, v], i) => {
    if (alive[i] === "dead") return;
    v.split(",").forEach((n, j) => (sum[j] = (sum[j] ?? 0) + (Number(n) || 0)));
  });
  return sum;
}
