import { createHmac } from "node:crypto";
import { windowHit, windowUnhit } from "./cluster.server";
import { log } from "./log.server";
import { derive } from "./secret.server";

// Fixed-window counters. `RateLimiter` counts in this process's memory; `SharedRateLimiter` counts
// in the cluster's Redis when there is one (docs/decisions/0021), so N servers behind a balancer
// allow what one would, not N times it (a guesser's requests land on every server in turn).

interface Window {
  count: number;
  resetAt: number;
}

export class RateLimiter {
  private windows = new Map<string, Window>();
  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  /** Counts an attempt; returns the seconds to wait when over the limit, else 0. */
  hit(key: string, now = Date.now()): number {
    let w = this.windows.get(key);
    if (!w || w.resetAt <= now) {
      w = { count: 0, resetAt: now + this.windowMs };
      this.windows.set(key, w);
    }
    w.count++;
    if (this.windows.size > 50_000) this.sweep(now);
    return w.count > this.limit ? Math.ceil((w.resetAt - now) / 1000) : 0;
  }

  /** Seconds to wait before another attempt is allowed, without counting one. */
  blocked(key: string, now = Date.now()): number {
    const w = this.windows.get(key);
    if (!w || w.resetAt <= now || w.count < this.limit) return 0;
    return Math.ceil((w.resetAt - now) / 1000);
  }

  /** Takes back one counted attempt (one that turned out fine). */
  refund(key: string) {
    const w = this.windows.get(key);
    if (w && w.count > 0) w.count--;
  }

  reset(key: string) {
    this.windows.delete(key);
  }

  private sweep(now: number) {
    for (const [k, w] of this.windows) if (w.resetAt <= now) this.windows.delete(k);
  }
}

/**
 * A fixed-window limit every server of a cluster counts together (a Redis key per window, INCR
 * with a lapse), and one server counts in memory. Each attempt is counted in memory too: while
 * the cluster's Redis does not answer, this server still holds the line on its own (a limit per
 * server, as before, rather than none or a form that refuses everyone).
 */
export class SharedRateLimiter {
  private readonly local: RateLimiter;
  constructor(
    /** Names this limit's keys in Redis (`login-account`). */
    private readonly name: string,
    private readonly limit: number,
    private readonly windowMs: number,
  ) {
    this.local = new RateLimiter(limit, windowMs);
  }

  /** Counts an attempt; returns the seconds to wait when over the limit, else 0. */
  async hit(key: string): Promise<number> {
    const here = this.local.hit(key);
    try {
      const shared = await windowHit(this.redisKey(key), this.windowMs);
      if (!shared) return here;
      return Math.max(here, shared.count > this.limit ? Math.ceil(shared.leftMs / 1000) : 0);
    } catch (err) {
      log.warn({ err }, `rate limit ${this.name}: the cluster's Redis did not answer; counting on this server only`);
      return here;
    }
  }

  /** Takes back one counted attempt (one that turned out fine). */
  async refund(key: string): Promise<void> {
    this.local.refund(key);
    await windowUnhit(this.redisKey(key)).catch((err) => log.warn({ err }, `rate limit ${this.name}: refund not counted in Redis`));
  }

  async reset(key: string): Promise<void> {
    this.local.reset(key);
    await windowUnhit(this.redisKey(key), true).catch((err) => log.warn({ err }, `rate limit ${this.name}: reset not counted in Redis`));
  }

  // Keyed by the server key (the servers of one cluster share it; clusters sharing a Redis do
  // not count together), and hashed, so Redis holds no email address.
  private redisKey(key: string): string {
    const digest = createHmac("sha256", derive("rate-limit")).update(`${this.name}\0${key}`).digest("base64url").slice(0, 32);
    return `${this.name}:${digest}`;
  }
}
