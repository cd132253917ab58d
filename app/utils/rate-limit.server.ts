// Fixed-window counters in memory: enough for one server guarding its log-in form.

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
