import { afterAll, describe, expect, it, vi } from "vitest";
import type { BoxLaunch, Runtime, RuntimeBox, RuntimeState } from "~/runtime/runtime";
import { storeModules } from "../support/store-modules";

// The box model without Docker, through setRuntimes(): the start slots, the serial chain and the
// reaper, against a real SQLite store. The runtime here is a recording stand-in for an engine
// (the seam's purpose); every box path against the real engine is in tests/integration.

const stores = storeModules("box-model");
const saved = process.env.HOLM_LAUNCH_CONCURRENCY;
afterAll(() => {
  if (saved === undefined) delete process.env.HOLM_LAUNCH_CONCURRENCY;
  else process.env.HOLM_LAUNCH_CONCURRENCY = saved;
});

interface Deferred {
  resolve: () => void;
  reject: (e: Error) => void;
}

/** A runtime whose create() waits until the test lets it go; it records what it was asked. */
class HeldRuntime implements Runtime {
  readonly name = "held";
  creating: Deferred[] = [];
  removed: string[] = [];
  states = new Map<string, RuntimeState>();
  answers = true;
  async ensureImage() {
    return { image: "held:1", built: false };
  }
  async imageStatus() {
    return { image: "held:1", present: true };
  }
  async imageInfo() {
    return undefined;
  }
  async listBoxImages() {
    return [];
  }
  async removeImage() {
    return false;
  }
  async prepare() {}
  create(launch: BoxLaunch): Promise<{ ref: string }> {
    return new Promise((resolve, reject) => {
      this.creating.push({ resolve: () => resolve({ ref: `ref-${launch.boxId}` }), reject });
    });
  }
  async start() {}
  async putSecrets() {}
  async stop() {}
  async pause() {}
  async unpause() {}
  async remove(ref: string) {
    this.removed.push(ref);
    this.states.set(ref, "missing");
  }
  async inspect(ref: string): Promise<RuntimeBox> {
    return { ref, boxId: "", state: this.states.get(ref) ?? "running", labels: {}, address: "192.0.2.1" };
  }
  async logs() {
    return [];
  }
  async list() {
    return [];
  }
  async ping() {
    return this.answers;
  }
  shell(): never {
    throw new Error("no shell here");
  }
}

async function load(concurrency: number) {
  process.env.HOLM_LAUNCH_CONCURRENCY = String(concurrency);
  await stores.openStore("memory");
  const rt = new HeldRuntime();
  (await import("~/runtime/index.server")).setRuntimes(new Map<string, Runtime>([["held", rt]]));
  const box = await import("~/models/box.server");
  const record = await import("~/models/box-record.server");
  const sync = await import("~/models/box-sync.server");
  const trace = await import("~/models/trace.server");
  return { rt, box, record, sync, trace };
}

const server = { kind: "server" } as const;
const until = async (cond: () => boolean | Promise<boolean>, ms = 5000) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe("start slots (HOLM_LAUNCH_CONCURRENCY)", () => {
  it("starts at most that many desktops at once; the next starts when one ends, even by failing", async () => {
    const { rt, box } = await load(2);
    const made = await Promise.all(
      [0, 1, 2].map(() => box.createBox(server, { placement: { runtime: "held" } }, { queue: true })),
    );
    expect(made.map((m) => [m.queued, m.box.state])).toEqual([[true, "starting"], [true, "starting"], [true, "starting"]]);
    await until(() => rt.creating.length === 2);
    // Held long enough for a third create to have begun if the slots let it.
    await new Promise((r) => setTimeout(r, 100));
    expect(rt.creating).toHaveLength(2);
    rt.creating[0]!.reject(new Error("no room on the engine"));
    await until(() => rt.creating.length === 3);
    const failed = await box.getBox(server, made[0]!.box.id).catch((e) => e);
    // Said in words, with the phase it failed in (box-start.server.ts).
    expect(failed).toMatchObject({
      state: "failed",
      reason: "The box's container could not be created or started: no room on the engine",
      start: { phase: "failed", failed_in: "container" },
    });
  });
});

describe("serial chain", () => {
  it("runs one box's lifecycle steps one after another, and a failed step does not stop the next", async () => {
    const { record } = await load(1);
    const log: string[] = [];
    const step = (name: string, ms: number, fail = false) =>
      record.serial("box_a", async () => {
        log.push(`${name}:start`);
        await new Promise((r) => setTimeout(r, ms));
        log.push(`${name}:end`);
        if (fail) throw new Error(name);
        return name;
      });
    const other = record.serial("box_b", async () => {
      log.push("other");
      return "other";
    });
    const results = await Promise.allSettled([step("stop", 30, true), step("resume", 1), other]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "fulfilled", "fulfilled"]);
    // box_b did not wait for box_a; box_a's steps did not overlap.
    expect(log.indexOf("other")).toBeLessThan(log.indexOf("stop:end"));
    expect(log.filter((l) => l !== "other")).toEqual(["stop:start", "stop:end", "resume:start", "resume:end"]);
  });
});

describe("reaper", () => {
  /** A ready box as a launch leaves it, written straight to the store (no agent to wait for). */
  let n = 0;
  async function readyBox(ctx: Awaited<ReturnType<typeof load>>, idle?: number) {
    const { db } = await import("~/utils/db.server");
    const now = Date.now();
    const id = `box_${(++n).toString(16).padStart(32, "0")}`;
    const spec = { desktop: { screens: 1, width: 1280, height: 800, features: [], packages: [] }, policy: {} };
    await db()
      .insertInto("box")
      .values({
        id, owner: null, runtime: "held", runtime_ref: `ref-${id}`, spec_digest: "d", spec_json: JSON.stringify(spec),
        placement_json: JSON.stringify({ runtime: "held" }), image: "held:1", state: "ready", reason: null, screens: 1,
        width: 1280, height: 800, persistent: 0, created_at_ms: now, expires_at_ms: now + 3600_000,
        idle_timeout_secs: idle ?? null, last_used_ms: now, removed_at_ms: null, desktop: 1,
      })
      .execute();
    return (await ctx.record.loadRow(id))!;
  }

  it("removes a box past its deadline: container removed, record kept as gone, trace says why", async () => {
    const ctx = await load(4);
    const row = await readyBox(ctx);
    expect(await ctx.sync.reapBoxes(Number(row.expires_at_ms) - 1)).toEqual({ removed: 0 });
    expect(await ctx.sync.reapBoxes(Number(row.expires_at_ms))).toEqual({ removed: 1 });
    expect(ctx.rt.removed).toContain(row.runtime_ref);
    const after = (await ctx.record.loadRow(row.id))!;
    expect(after).toMatchObject({ state: "gone", reason: "expired: the box passed its deadline" });
    const entries = (await ctx.trace.readTrace(row.id, { limit: 500 })).entries;
    expect(entries.at(-1)).toMatchObject({ event: "gone", data: { reason: "expired: the box passed its deadline" } });
  });

  it("removes a box idle past its timeout, and marks one the runtime lost as gone", async () => {
    const ctx = await load(4);
    const idle = await readyBox(ctx, 60);
    const lost = await readyBox(ctx);
    ctx.rt.states.set(lost.runtime_ref!, "missing");
    const now = Number(idle.last_used_ms) + 60_000;
    expect(await ctx.sync.reapBoxes(now)).toEqual({ removed: 2 });
    expect(await ctx.record.loadRow(idle.id)).toMatchObject({ state: "gone", reason: "idle: unused for 60 s" });
    expect(await ctx.record.loadRow(lost.id)).toMatchObject({ state: "gone", reason: "the runtime no longer has the box" });
  });

  it("keeps the record of a box whose runtime does not answer, as unreachable", async () => {
    const ctx = await load(4);
    const row = await readyBox(ctx);
    ctx.rt.answers = false;
    expect(await ctx.sync.reapBoxes(Number(row.created_at_ms) + 1000)).toEqual({ removed: 0 });
    expect(await ctx.record.loadRow(row.id)).toMatchObject({ state: "unreachable", reason: "the held runtime does not answer" });
    expect(ctx.rt.removed).toEqual([]);
  });
});

vi.setConfig({ testTimeout: 20_000 });

describe("start log", () => {
  it("keeps the heading of the box's own output when that output is longer than the log", async () => {
    await load(2);
    const { StartTracker } = await import("~/models/box-start.server");
    const { START_LOG_LINES } = await import("~/protocol/box-console");
    const start = new StartTracker({ id: "box_startlog", start_json: null } as never);
    const own = Array.from({ length: START_LOG_LINES * 2 }, (_, i) => `line ${i}`);
    start.containerLines([...own, "holm: Xvfb exited with status 1; stopping the box"]);
    const kept = start.start.log;
    expect(kept).toHaveLength(START_LOG_LINES);
    expect(kept[0]).toBe("— the box's own output —");
    expect(kept.at(-1)).toBe("│ holm: Xvfb exited with status 1; stopping the box");
    start.drop();
  });

  it("marks every line of the box's output as the box's, so none passes for the heading", async () => {
    await load(2);
    const { StartTracker } = await import("~/models/box-start.server");
    const start = new StartTracker({ id: "box_startlog2", start_json: null } as never);
    start.containerLines(["— the box's own output —", "holm: fatal: \x1b[31mred\x07"]);
    expect(start.start.log).toEqual(["— the box's own output —", "│ — the box's own output —", "│ holm: fatal:  [31mred "]);
    start.drop();
  });

  it("a line separator in the box's output starts no line of its own (it would show unmarked)", async () => {
    await load(2);
    const { StartTracker } = await import("~/models/box-start.server");
    const start = new StartTracker({ id: "box_startlog3", start_json: null } as never);
    const line = "holm: fatal: x\u2028— the box's own output —\u2029holm: fatal: the server key is wrong";
    start.containerLines([line]);
    expect(start.start.log.every((l) => !/[\u2028\u2029]/.test(l))).toBe(true);
    start.drop();
  });
});

describe("a box's end in the server's words", () => {
  it("says a box the server told to stop stopped so, even when something in it once ran out of memory", async () => {
    const { exitWords } = await import("~/models/box-exit.server");
    expect(exitWords({ code: 0, oom_killed: true })).toBe("it was told to stop (TERM)");
    expect(exitWords({ code: 137, oom_killed: true })).toMatch(/^it ran out of memory .*; its container was killed \(exit status 137\)$/);
  });
});

describe("the pool's removal of a box it no longer wants", () => {
  /** A ready pool box of this server, as the pool launches it. */
  async function poolBox() {
    const ctx = await load(2);
    const { poolRow, poolPlacement } = await import("~/models/pool-row.server");
    const { normalizeSpec, specDigest } = await import("~/models/spec.server");
    const { db } = await import("~/utils/db.server");
    const spec = normalizeSpec({});
    const row = { ...poolRow(specDigest(spec), spec, { ...poolPlacement(), runtime: "held" }, Date.now()), state: "ready", runtime_ref: "ref-pool" };
    await db().insertInto("box").values(row).execute();
    const { SERVER_ID } = await import("~/utils/cluster.server");
    const { claimWithinLimits } = await import("~/models/quota.server");
    return { ...ctx, row, SERVER_ID, claim: () => claimWithinLimits(null, row.id, { owner: "ws_a", last_used_ms: Date.now() }) };
  }

  it("leaves a box claimed since (by a server still on the old version) with its new owner", async () => {
    const ctx = await poolBox();
    expect(await ctx.claim()).toBe(true);
    await ctx.record.removeRow(ctx.row, "pool: its server is gone", server, { pooledBy: ctx.SERVER_ID });
    expect(await ctx.record.loadRow(ctx.row.id)).toMatchObject({ owner: "ws_a", pooled: 0, state: "ready", removed_at_ms: null });
    expect(ctx.rt.removed).toEqual([]);
  });

  it("removes it while unclaimed, and a claim after that finds nothing to take", async () => {
    const ctx = await poolBox();
    await ctx.record.removeRow(ctx.row, "pool: its server is gone", server, { pooledBy: ctx.SERVER_ID });
    expect(await ctx.claim()).toBe(false);
    expect(await ctx.record.loadRow(ctx.row.id)).toMatchObject({ owner: null, state: "gone" });
    expect(ctx.rt.removed).toEqual(["ref-pool"]);
  });

  it("leaves a box another server took over since", async () => {
    const ctx = await poolBox();
    const { db } = await import("~/utils/db.server");
    await db().updateTable("box").set({ server_id: "another-server" }).where("id", "=", ctx.row.id).execute();
    await ctx.record.removeRow(ctx.row, "pool: its server is gone", server, { pooledBy: ctx.SERVER_ID });
    expect(await ctx.record.loadRow(ctx.row.id)).toMatchObject({ state: "ready", removed_at_ms: null });
  });
});
