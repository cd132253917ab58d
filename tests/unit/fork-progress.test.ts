import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { type ForkChange, beginReplay, endReplay, forkChanges, forkOf, forkReplaysOf, stepReplay } from "~/models/fork-progress.server";
import { readTrace, recordEntry } from "~/models/trace.server";

// A fork's replay progress without a box (tests/integration/fork-replay.test.ts and
// tests/e2e/fork-progress.spec.ts follow real ones): what is pushed as it goes, what a socket
// gets as it connects, and what is read back from the trace once the server forgot it.

const boxId = () => `box_${randomBytes(16).toString("hex")}`;
const skipped = [{ seq: 2, kind: "file_written", why: "the trace records that /tmp/x was written, not what went into it" }];

describe("fork progress", () => {
  it("pushes each change with a growing v, ends with the report in the fork's trace", async () => {
    const id = boxId();
    const seen: ForkChange[] = [];
    const on = (c: ForkChange) => c.box_id === id && seen.push(c);
    forkChanges.on("change", on);
    try {
      beginReplay(id, "ws_a", { box: "box_src", up_to: 7 }, 3, skipped);
      stepReplay(id, { attempted: 2, ok: 2 });
      await endReplay(id, { attempted: 3, ok: 2, stopped_at: 9, truncated: false, skipped });
      // After the end, a late step changes nothing.
      stepReplay(id, { attempted: 1, ok: 1 });
    } finally {
      forkChanges.off("change", on);
    }
    expect(seen.map((c) => [c.replay.attempted, c.replay.ok, c.replay.done])).toEqual([
      [0, 0, false],
      [2, 2, false],
      [3, 2, true],
    ]);
    expect(seen.every((c) => c.owner === "ws_a")).toBe(true);
    expect(seen.map((c) => c.v)).toEqual([...seen.map((c) => c.v)].sort((a, b) => a - b));
    expect(new Set(seen.map((c) => c.v)).size).toBe(3);
    const report = { total: 3, attempted: 3, ok: 2, done: true, stopped_at: 9, truncated: false, skipped };
    expect(await forkOf(id)).toEqual({ from: { box: "box_src", up_to: 7 }, replay: report });
    const ended = (await readTrace(id)).entries.find((e) => e.event === "replay_ended");
    expect(ended).toMatchObject({ actor: "server", data: { total: 3, attempted: 3, ok: 2, stopped_at: 9, truncated: false, skipped } });
    // A socket of the workspace gets it as it connects; another workspace's does not.
    expect(forkReplaysOf("ws_a").find((p) => p.box_id === id)?.replay).toEqual(report);
    expect(forkReplaysOf("ws_b").find((p) => p.box_id === id)).toBeUndefined();
  });

  it("reads a fork the server does not hold from its trace; a box that is no fork has none", async () => {
    const plain = boxId();
    await recordEntry(plain, { actor: "agent", event: "box_created", data: {} });
    expect(await forkOf(plain)).toBeUndefined();

    const ended = boxId();
    await recordEntry(ended, { actor: "agent", event: "box_created", data: {} });
    await recordEntry(ended, { actor: "server", event: "forked_from", data: { box: "box_src", up_to: null, steps: 2 } });
    await recordEntry(ended, { actor: "agent", event: "acted", data: { step: { type: "wait", ms: 1 }, ok: true } });
    await recordEntry(ended, { actor: "server", event: "replay_ended", data: { total: 2, attempted: 2, ok: 2, stopped_at: null, truncated: false, skipped: [] } });
    expect(await forkOf(ended)).toEqual({
      from: { box: "box_src", up_to: null },
      replay: { total: 2, attempted: 2, ok: 2, done: true, stopped_at: null, truncated: false, skipped: [] },
    });

    // Forked, and the server stopped before the replay ended: it says so rather than "running".
    const cut = boxId();
    await recordEntry(cut, { actor: "agent", event: "box_created", data: {} });
    await recordEntry(cut, { actor: "server", event: "forked_from", data: { box: "box_src", up_to: 4, steps: 5 } });
    const got = await forkOf(cut);
    expect(got?.from).toEqual({ box: "box_src", up_to: 4 });
    expect(got?.replay).toMatchObject({ total: 5, attempted: 0, done: true, truncated: true, reason: expect.stringMatching(/server stopped/) });
  });
});
