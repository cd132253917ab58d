import { describe, expect, it } from "vitest";
import { type Capacity, refusal } from "~/models/capacity.server";

// Admission's rule (ADR 0016), on figures: a count limit when set, and memory with the boxes
// still starting counted as taken.

const MIB = 1024 ** 2;
const base: Capacity = { live: 0, starting: 0, maxLive: 0, memAvailable: 8000 * MIB, memFree: 7000 * MIB, admitBytes: 300 * MIB };

describe("admission", () => {
  it("admits while the count and the memory allow", () => {
    expect(refusal(base)).toBeUndefined();
    expect(refusal({ ...base, live: 79, maxLive: 80 })).toBeUndefined();
  });
  it("refuses at the most live boxes, saying the setting", () => {
    expect(refusal({ ...base, live: 80, maxLive: 80 })).toMatch(/most live boxes \(80 of HOLM_MAX_LIVE_BOXES=80\)/);
  });
  it("refuses when what is free after the reserve and the starting boxes is under one box", () => {
    expect(refusal({ ...base, starting: 4, memFree: 299 * MIB })).toMatch(/no memory for another box \(8000 MiB available, 4 box\(es\) still starting/);
    expect(refusal({ ...base, memFree: 300 * MIB })).toBeUndefined();
  });
  it("refuses while the disk watch finds the disk short, with its words", () => {
    expect(refusal({ ...base, disk: "this machine's disk is nearly full (…)" })).toMatch(/disk is nearly full/);
  });
  it("with no memory figure (no /proc/meminfo), only the count decides", () => {
    expect(refusal({ ...base, memAvailable: undefined, memFree: undefined })).toBeUndefined();
  });
});
