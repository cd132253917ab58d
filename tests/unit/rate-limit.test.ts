import { describe, expect, it } from "vitest";
import { RateLimiter } from "~/utils/rate-limit.server";

describe("rate limiter", () => {
  it("blocks after the limit within the window, then lets go", () => {
    const rl = new RateLimiter(3, 1000);
    const t = 1_000_000;
    for (let i = 0; i < 3; i++) {
      expect(rl.blocked("a", t)).toBe(0);
      rl.hit("a", t);
    }
    expect(rl.blocked("a", t + 10)).toBe(1);
    expect(rl.blocked("b", t + 10)).toBe(0);
    expect(rl.blocked("a", t + 1001)).toBe(0);
  });

  it("reset clears a key", () => {
    const rl = new RateLimiter(1, 60_000);
    rl.hit("a");
    expect(rl.blocked("a")).toBeGreaterThan(0);
    rl.reset("a");
    expect(rl.blocked("a")).toBe(0);
  });

  it("counts an attempt before it is checked, and gives back one that turned out fine", () => {
    const rl = new RateLimiter(2, 60_000);
    const t = 1_000_000;
    expect(rl.hit("a", t)).toBe(0);
    expect(rl.hit("a", t)).toBe(0);
    // A third attempt in flight is over the limit before any password is checked.
    expect(rl.hit("a", t)).toBeGreaterThan(0);
    rl.refund("a");
    rl.refund("a");
    expect(rl.hit("a", t)).toBe(0);
  });
});
