import { describe, expect, it } from "vitest";
import { type Planned, batchesOf, forkPlacement } from "~/models/fork.server";
import type { Step } from "~/models/action-schema.server";
import type { TraceEntry } from "~/models/trace-types.server";

// The fork's two derivations, without a box: its placement from the source's, and the batches its
// replay sends from the recorded steps (tests/integration/fork.test.ts runs both on real boxes).

describe("forkPlacement", () => {
  const recorded = { runtime: "elsewhere", expires_after_secs: 3600, persistent: false, memory: "2g", profile: "work" };

  it('"The new box does not get the source\'s browser profile" (001)', () => {
    expect(forkPlacement(recorded, undefined)).not.toHaveProperty("profile");
    expect(forkPlacement(recorded, { expires_after_secs: 600 })).not.toHaveProperty("profile");
  });

  it('"on the same runtime, unless your placement names another" (001): the given fields over the original\'s', () => {
    expect(forkPlacement(recorded, { expires_after_secs: 600 })).toEqual({
      runtime: "elsewhere",
      expires_after_secs: 600,
      persistent: false,
      memory: "2g",
    });
    expect(forkPlacement(recorded, { runtime: "docker" }).runtime).toBe("docker");
  });

  it("refuses a given profile as unsupported, and leaves out keys an older server recorded", () => {
    expect(() => forkPlacement(recorded, { profile: "work" })).toThrow(expect.objectContaining({ code: "unsupported" }));
    expect(forkPlacement({ ...recorded, gpu: "any" }, undefined)).not.toHaveProperty("gpu");
  });
});

describe("batchesOf", () => {
  let seq = 0;
  const acted = (step: Step, at_ms: number, batch?: Record<string, unknown>): Planned => ({
    entry: { seq: seq++, at_ms, actor: "agent", event: "acted", screen: 0, data: { step, ok: true, ...(batch && { batch }) } } as TraceEntry,
    step,
  });
  const move = (x: number): Step => ({ type: "move", to: { x, y: 1 } });

  it("sends one recorded batch as one, with its settle_ms, want and keep_going, and its own gap before it", () => {
    const mark = { id: "b1", began_ms: 900, settle_ms: 200, want: ["frame"], keep_going: true };
    const batches = batchesOf([
      acted(move(1), 500, { id: "b0", index: 0, began_ms: 400 }),
      acted(move(2), 1000, { ...mark, index: 0 }),
      // index 1 was refused in the source and is not planned; the batch stays one
      acted(move(3), 1000, { ...mark, index: 2 }),
      acted(move(4), 1000, { ...mark, index: 3 }),
    ]);
    expect(batches.map((b) => b.planned.map((p) => (p.step as { to: { x: number } }).to.x))).toEqual([[1], [2, 3, 4]]);
    expect(batches[1]).toMatchObject({ began: 900, ended: 1000, options: { settle_ms: 200, want: ["frame"], keep_going: true } });
  });

  it("replays the steps of a trace without batch marks one by one, as before", () => {
    const batches = batchesOf([acted(move(1), 100), acted(move(2), 100), acted(move(3), 200)]);
    expect(batches.map((b) => b.planned.length)).toEqual([1, 1, 1]);
    expect(batches.map((b) => [b.began, b.ended])).toEqual([[100, 100], [100, 100], [200, 200]]);
    expect(batches.every((b) => Object.keys(b.options).length === 0)).toBe(true);
  });

  it("drops recorded batch options a batch body would refuse, and never joins two screens", () => {
    const [bad] = batchesOf([acted(move(1), 100, { id: "x", index: 0, began_ms: 50, settle_ms: -5 })]);
    expect(bad!.options).toEqual({});
    const other = acted(move(2), 100, { id: "x", index: 1, began_ms: 50 });
    other.entry.screen = 1;
    expect(batchesOf([acted(move(1), 100, { id: "x", index: 0, began_ms: 50 }), other])).toHaveLength(2);
  });
});
