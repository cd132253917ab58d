import { describe, expect, it } from "vitest";
import { BoundedEventStore } from "~/mcp/event-store.server";

// The MCP event store (Last-Event-ID replay): bounded by count, bytes and age, oldest first, and
// a replay never skips silently: an id no longer kept is unknown, not "nothing missed".

const msg = (id: number, pad = "") => ({ jsonrpc: "2.0" as const, id, result: { pad } });

async function replay(store: BoundedEventStore, after: string) {
  const sent: Array<[string, unknown]> = [];
  const stream = await store.replayEventsAfter(after, { send: async (id, m) => void sent.push([id, m]) });
  return { stream, sent };
}

describe("BoundedEventStore", () => {
  it("replays what came after an id on that id's stream only, without priming events", async () => {
    const s = new BoundedEventStore();
    const prime = await s.storeEvent("a", {} as never);
    await s.storeEvent("b", msg(1));
    const a2 = await s.storeEvent("a", msg(2));
    const a3 = await s.storeEvent("a", msg(3));
    expect(await s.getStreamIdForEventId(prime)).toBe("a");
    const { stream, sent } = await replay(s, prime);
    expect(stream).toBe("a");
    expect(sent).toEqual([
      [a2, msg(2)],
      [a3, msg(3)],
    ]);
    expect((await replay(s, a3)).sent).toEqual([]);
    expect(await s.getStreamIdForEventId("nope")).toBeUndefined();
    await expect(replay(s, "nope")).rejects.toThrow(/not kept/);
  });

  it("keeps at most maxEvents, oldest dropped first; a dropped id is unknown", async () => {
    const s = new BoundedEventStore({ maxEvents: 3, maxBytes: 1e9, maxAgeMs: 1e9 });
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await s.storeEvent("a", msg(i)));
    expect(s.size).toBe(3);
    expect(await s.getStreamIdForEventId(ids[1]!)).toBeUndefined();
    expect((await replay(s, ids[2]!)).sent.map(([, m]) => (m as { id: number }).id)).toEqual([3, 4]);
  });

  it("keeps at most maxBytes, but always the newest event, however large", async () => {
    const s = new BoundedEventStore({ maxEvents: 100, maxBytes: 1000, maxAgeMs: 1e9 });
    for (let i = 0; i < 5; i++) await s.storeEvent("a", msg(i, "x".repeat(300)));
    expect(s.bytes).toBeLessThanOrEqual(1000);
    expect(s.size).toBe(2);
    const big = await s.storeEvent("a", msg(9, "x".repeat(5000)));
    expect(s.size).toBe(1);
    expect(await s.getStreamIdForEventId(big)).toBe("a");
  });

  it("shares totalBytes among the sessions open: many sessions keep less each", async () => {
    let open = 1;
    const s = new BoundedEventStore({ maxEvents: 1000, maxBytes: 10_000, maxAgeMs: 1e9, totalBytes: 20_000, sessions: () => open });
    for (let i = 0; i < 40; i++) await s.storeEvent("a", msg(i, "x".repeat(300)));
    // One session: its own limit (10,000 bytes) is the smaller.
    expect(s.bytes).toBeGreaterThan(9_000);
    expect(s.bytes).toBeLessThanOrEqual(10_000);
    // Ten sessions: 2,000 bytes each.
    open = 10;
    await s.storeEvent("a", msg(99, "x".repeat(300)));
    expect(s.bytes).toBeLessThanOrEqual(2_000);
    expect(s.size).toBeGreaterThan(1);
  });

  it("forgets events older than maxAgeMs", async () => {
    let now = 1000;
    const s = new BoundedEventStore({ maxEvents: 100, maxBytes: 1e9, maxAgeMs: 60_000 }, () => now);
    const old = await s.storeEvent("a", msg(1));
    now += 30_000;
    const newer = await s.storeEvent("a", msg(2));
    now += 40_000;
    expect(await s.getStreamIdForEventId(old)).toBeUndefined();
    expect(await s.getStreamIdForEventId(newer)).toBe("a");
    now += 60_000;
    expect(await s.getStreamIdForEventId(newer)).toBeUndefined();
    expect(s.size).toBe(0);
  });
});
