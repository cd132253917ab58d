import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ON_POSTGRES } from "../support/postgres";
import { storeModules } from "../support/store-modules";

// The trace stores, each in a fresh module graph (tests/support/store-modules.ts); the
// PostgreSQL one when the run has a PostgreSQL (HOLM_TEST_STORE=postgres or HOLM_TEST_POSTGRES=1).

type TraceModule = typeof import("~/models/trace.server");
type DbModule = typeof import("~/utils/db.server");
const ROOT = path.resolve(import.meta.dirname, "../..");
const stores = storeModules("trace");
const tempDir = stores.tempDir;

const BACKENDS = ["memory", "local", ...(ON_POSTGRES || process.env.HOLM_TEST_POSTGRES === "1" ? (["postgres"] as const) : [])] as const;

async function load(backend: (typeof BACKENDS)[number], stateDir = tempDir()) {
  const { dbm } = await stores.openStore(backend, stateDir);
  const trace: TraceModule = await import("~/models/trace.server");
  expect(trace.traceStore().kind).toBe(backend);
  return { dbm, trace, stateDir };
}

let boxCounter = 0;
const newBoxId = () => `box_${(0xa0000000 + ++boxCounter).toString(16)}${process.pid.toString(16).padStart(8, "0")}`;

/** A frame to record, with the hash the store will give it (SHA-256 of the bytes). */
function frame(label: string) {
  const png = Buffer.from(`png bytes of ${label}`);
  return { hash: createHash("sha256").update(png).digest("hex"), png };
}

async function insertBox(dbm: DbModule, id: string, removedAt: number | null, owner: string | null = null) {
  await dbm
    .db()
    .insertInto("box")
    .values({
      id,
      owner,
      runtime: "docker",
      runtime_ref: null,
      spec_digest: "d",
      spec_json: "{}",
      placement_json: "{}",
      image: null,
      state: removedAt === null ? "ready" : "gone",
      reason: null,
      screens: 1,
      width: 1280,
      height: 800,
      persistent: 0,
      created_at_ms: 0,
      expires_at_ms: Date.now() + 3_600_000,
      idle_timeout_secs: null,
      last_used_ms: 0,
      removed_at_ms: removedAt,
    })
    .execute();
}

async function readAll(trace: TraceModule, boxId: string) {
  const all = [];
  let after = -1;
  for (;;) {
    const page = await trace.readTrace(boxId, { after, limit: 500 });
    all.push(...page.entries);
    if (page.next === null) return all;
    after = page.next;
  }
}

function framesOnDisk(stateDir: string): string[] {
  const root = path.join(stateDir, "frames");
  if (!fs.existsSync(root)) return [];
  return fs.readdirSync(root).flatMap((d) => fs.readdirSync(path.join(root, d)).map((f) => `${d}/${f}`));
}

const DAY = 86_400_000;

describe.each(BACKENDS)("trace store: %s", (backend) => {
  it("assigns seq 0, 1, 2… per box, gap-free under concurrent calls", async () => {
    const { trace } = await load(backend);
    const a = newBoxId();
    const b = newBoxId();
    expect(await trace.traceStartedFresh(a)).toBe(true);
    const first = await trace.recordEntry(a, { actor: "server", event: "box_created", data: { width: 1280 } });
    expect(first).toMatchObject({ seq: 0, actor: "server", event: "box_created", data: { width: 1280 } });
    expect(first.at_ms).toBeGreaterThan(Date.now() - 5000);
    expect(await trace.traceStartedFresh(a)).toBe(false);
    expect(await trace.hasTrace(a)).toBe(true);

    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 120; i++) {
      calls.push(trace.recordEntry(a, { actor: "agent", event: "acted", screen: 0, data: { i } }));
      calls.push(trace.recordEntry(b, { actor: "agent", event: "acted", data: { i } }));
      if (i % 20 === 0) {
        calls.push(trace.recordEntries(a, [1, 2, 3].map((s) => ({ actor: "agent" as const, event: "acted", data: { s } }))));
      }
    }
    await Promise.all(calls);
    const entriesA = await readAll(trace, a);
    const entriesB = await readAll(trace, b);
    expect(entriesA.map((e) => e.seq)).toEqual(Array.from({ length: 1 + 120 + 18 }, (_, i) => i));
    expect(entriesB.map((e) => e.seq)).toEqual(Array.from({ length: 120 }, (_, i) => i));
    // Single calls keep their call order.
    const singles = entriesB.map((e) => e.data!.i);
    expect(singles).toEqual(Array.from({ length: 120 }, (_, i) => i));
    for (let i = 1; i < entriesA.length; i++) expect(entriesA[i]!.at_ms).toBeGreaterThanOrEqual(entriesA[i - 1]!.at_ms);
    // A batch keeps its steps together and in order.
    const batch = await trace.recordEntries(b, [
      { actor: "agent", event: "acted", data: { step: 0 } },
      { actor: "agent", event: "acted", data: { step: 1 } },
    ]);
    expect(batch.map((e) => e.seq)).toEqual([120, 121]);
    expect(await trace.recordEntries(b, [])).toEqual([]);
  });

  it("names the issuer of an entry that has `by` (a person's input), keeping call order", async () => {
    const { dbm, trace } = await load(backend);
    await dbm.db().insertInto("user").values({ id: "usr_ord", email: "ord@example.com", name: "Ord", password_hash: "x", is_admin: 0, created_at_ms: 0 }).execute();
    const box = newBoxId();
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 60; i++) {
      // Every third names a person (a name to look up, first uncached), the others name nobody.
      const data = i % 3 === 0 ? { i, by: i % 2 ? "user:usr_ord" : "user:usr_gone" } : { i };
      calls.push(trace.recordEntry(box, { actor: i % 3 === 0 ? "person" : "agent", event: "acted", data }));
    }
    calls.push(trace.recordEntry(box, { actor: "person", event: "acted", data: { i: 60, by: "user:usr_ord", by_name: "as given" } }));
    await Promise.all(calls);
    const all = await readAll(trace, box);
    expect(all.map((e) => e.data!.i)).toEqual(Array.from({ length: 61 }, (_, i) => i));
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: 61 }, (_, i) => i));
    const names = all.filter((e) => e.data!.by).map((e) => [e.data!.by, e.data!.by_name]);
    expect(names).toHaveLength(21);
    // A known person by name; one the store does not know by the issuer itself; a given name stays.
    for (const [by, name] of names.slice(0, -1)) expect(name).toBe(by === "user:usr_ord" ? "Ord" : "user:usr_gone");
    expect(names.at(-1)).toEqual(["user:usr_ord", "as given"]);
    expect(all.filter((e) => !e.data!.by).every((e) => e.data!.by_name === undefined)).toBe(true);
  });

  it("pages with after and next", async () => {
    const { trace } = await load(backend);
    const box = newBoxId();
    const rows = Array.from({ length: 1234 }, (_, i) => ({ actor: "agent" as const, event: "acted", data: { i } }));
    await trace.recordEntries(box, rows);
    const p1 = await trace.readTrace(box, { limit: 500 });
    expect(p1.entries).toHaveLength(500);
    expect(p1.entries[0]!.seq).toBe(0);
    expect(p1.next).toBe(499);
    const p2 = await trace.readTrace(box, { after: p1.next!, limit: 500 });
    expect(p2.entries[0]!.seq).toBe(500);
    expect(p2.next).toBe(999);
    const p3 = await trace.readTrace(box, { after: p2.next!, limit: 500 });
    expect(p3.entries.map((e) => e.seq)).toEqual(Array.from({ length: 234 }, (_, i) => 1000 + i));
    expect(p3.next).toBeNull();
    // Exactly one page's worth left: no more after it.
    expect((await trace.readTrace(box, { after: 733, limit: 500 })).next).toBeNull();
    expect((await trace.readTrace(box, { after: 732, limit: 500 })).next).toBe(1232);
    // Defaults and bounds.
    expect((await trace.readTrace(box)).entries).toHaveLength(trace.TRACE_PAGE_DEFAULT);
    expect((await trace.readTrace(box, { limit: 10_000 })).entries).toHaveLength(500);
    expect(await trace.readTrace(box, { after: 1233 })).toEqual({ entries: [], next: null });
    expect(await trace.readTrace(box, { after: 5000 })).toEqual({ entries: [], next: null });
    expect(await trace.readTrace(newBoxId())).toEqual({ entries: [], next: null });
    // The shape of an entry: only the fields that apply.
    const e = (await trace.readTrace(box, { after: 40, limit: 1 })).entries[0]!;
    expect(e).toEqual({ seq: 41, at_ms: e.at_ms, actor: "agent", event: "acted", data: { i: 41 } });
  });

  it("stores a frame once by hash and keeps the given times in order", async () => {
    const { trace, stateDir } = await load(backend);
    const a = newBoxId();
    const b = newBoxId();
    const f = frame("desktop");
    const t0 = Date.now() - 60_000;
    const [e1] = await trace.recordEntries(a, [{ actor: "agent", event: "frame", screen: 0, frame: f, at_ms: t0 }]);
    expect(e1).toEqual({ seq: 0, at_ms: t0, actor: "agent", event: "frame", screen: 0, frame: f.hash });
    // An earlier time than the last entry is clamped: at_ms never decreases.
    const e2 = await trace.recordEntry(a, { actor: "person", event: "frame", screen: 1, frame: f, at_ms: t0 - 5000 });
    expect(e2.at_ms).toBe(t0);
    await trace.recordEntry(b, { actor: "agent", event: "frame", screen: 0, frame: { png: Buffer.from(f.png) } });
    expect(await trace.readFrame(f.hash)).toEqual(f.png);
    expect(await trace.readBoxFrame(a, f.hash)).toEqual(f.png);
    expect(await trace.readBoxFrame(b, f.hash)).toEqual(f.png);
    expect(await trace.readBoxFrame(newBoxId(), f.hash)).toBeUndefined();
    expect(await trace.readFrame("0".repeat(40))).toBeUndefined();
    expect(await trace.readFrame("../../etc/passwd")).toBeUndefined();
    if (backend === "local") {
      expect(framesOnDisk(stateDir)).toEqual([`${f.hash.slice(0, 2)}/${f.hash}.png`]);
    }
    await expect(trace.recordEntry(a, { actor: "agent", event: "frame", frame: { png: Buffer.alloc(0) } })).rejects.toThrow(/PNG bytes/);
    await expect(trace.recordEntry(a, { actor: "robot" as "agent", event: "x" })).rejects.toThrow(/actor/);
    // A refused call takes no seq.
    expect((await trace.recordEntry(a, { actor: "agent", event: "acted" })).seq).toBe(2);
  });

  it("records a frame only when the screen changed", async () => {
    const { trace } = await load(backend);
    const box = newBoxId();
    const x = frame("x");
    const y = frame("y");
    expect(await trace.recordFrameIfChanged(box, 0, "agent", x)).toMatchObject({ seq: 0, event: "frame", screen: 0, frame: x.hash });
    expect(await trace.recordFrameIfChanged(box, 0, "agent", x)).toBeUndefined();
    expect(await trace.recordFrameIfChanged(box, 0, "person", x)).toBeUndefined();
    // Another screen has its own last frame.
    expect(await trace.recordFrameIfChanged(box, 1, "agent", x)).toMatchObject({ seq: 1, screen: 1 });
    expect(await trace.recordFrameIfChanged(box, 0, "person", y)).toMatchObject({ seq: 2, actor: "person", frame: y.hash });
    expect(await trace.recordFrameIfChanged(box, 0, "agent", x)).toMatchObject({ seq: 3, frame: x.hash });
    // Concurrent calls with one new frame write it once.
    const z = frame("z");
    const all = await Promise.all(Array.from({ length: 8 }, () => trace.recordFrameIfChanged(box, 0, "agent", z)));
    expect(all.filter(Boolean)).toHaveLength(1);
    // A frame entry written through recordEntry counts as the last frame too.
    await trace.recordEntry(box, { actor: "agent", event: "frame", screen: 0, frame: x });
    expect(await trace.recordFrameIfChanged(box, 0, "agent", x)).toBeUndefined();
    expect((await readAll(trace, box)).map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("prunes old frames, then old entries, then traces of boxes removed long ago", async () => {
    const { trace, dbm, stateDir } = await load(backend);
    const now = Date.now();
    const [a, b, c] = [newBoxId(), newBoxId(), newBoxId()];
    await insertBox(dbm, a, null);
    await insertBox(dbm, b, now - 8 * DAY);
    await insertBox(dbm, c, now - 1 * DAY);
    const [f1, f2, f3, f4, f5] = ["f1", "f2", "f3", "f4", "f5"].map(frame);
    await trace.recordEntries(a, [
      { actor: "server", event: "box_created", at_ms: now - 40 * DAY },
      { actor: "agent", event: "frame", screen: 0, frame: f1!, at_ms: now - 35 * DAY },
      { actor: "agent", event: "frame", screen: 0, frame: f2!, at_ms: now - 10 * DAY },
      { actor: "agent", event: "frame", screen: 0, frame: f3!, at_ms: now - 3_600_000 },
      { actor: "agent", event: "acted", at_ms: now - 3_600_000 },
    ]);
    await trace.recordEntries(b, [
      { actor: "agent", event: "frame", screen: 0, frame: f4!, at_ms: now - 6 * DAY },
      { actor: "agent", event: "acted", at_ms: now - 6 * DAY },
    ]);
    await trace.recordEntry(c, { actor: "agent", event: "frame", screen: 0, frame: f5!, at_ms: now - 2 * DAY });

    // Frames: f1, f2 (not referred to for 7 days) and f4 (only B's trace, removed with it).
    // Entries: A's two older than 30 days, and B's two with its trace.
    const removed = await trace.pruneTraces({ now, maxRemovedAgeMs: 5 * DAY });
    expect(removed).toEqual({ frames: 3, entries: 4, boxes: 1 });

    const left = await readAll(trace, a);
    expect(left.map((e) => e.seq)).toEqual([2, 3, 4]);
    // The entry keeps the hash of a frame that went before it.
    expect(left[0]!.frame).toBe(f2!.hash);
    for (const f of [f1, f2, f4]) expect(await trace.readFrame(f!.hash)).toBeUndefined();
    expect(await trace.readBoxFrame(a, f2!.hash)).toBeUndefined();
    expect(await trace.readBoxFrame(a, f3!.hash)).toEqual(f3!.png);
    expect(await trace.readTrace(b)).toEqual({ entries: [], next: null });
    expect(await trace.hasTrace(b)).toBe(false);
    // Removed recently: the trace stays.
    expect((await trace.readTrace(c)).entries).toHaveLength(1);
    expect(await trace.readBoxFrame(c, f5!.hash)).toEqual(f5!.png);
    if (backend === "local") {
      expect(framesOnDisk(stateDir).sort()).toEqual([f3!, f5!].map((f) => `${f.hash.slice(0, 2)}/${f.hash}.png`).sort());
    }

    // Nothing more to do; seq goes on after pruned entries.
    expect(await trace.pruneTraces({ now, maxRemovedAgeMs: 5 * DAY })).toEqual({ frames: 0, entries: 0, boxes: 0 });
    expect((await trace.recordEntry(a, { actor: "agent", event: "acted" })).seq).toBe(5);
    // Defaults: 7 days for frames, 30 days for entries and removed boxes.
    expect(trace.DEFAULT_MAX_FRAME_AGE_MS).toBe(7 * DAY);
    expect(trace.DEFAULT_MAX_ENTRY_AGE_MS).toBe(30 * DAY);
    // 31 days on: A's four entries and C's one go; C was removed, so its trace goes whole.
    expect(await trace.pruneTraces({ now: now + 31 * DAY })).toEqual({ frames: 2, entries: 5, boxes: 1 });
    expect(await trace.hasTrace(c)).toBe(false);
    expect(await trace.hasTrace(a)).toBe(true);
  });
});

describe("trace store: memory caps", () => {
  it("keeps at most MEMORY_MAX_ENTRIES_PER_BOX entries, oldest dropped first", async () => {
    const { trace } = await load("memory");
    const box = newBoxId();
    const over = 7;
    const total = trace.MEMORY_MAX_ENTRIES_PER_BOX + over;
    for (let i = 0; i < total; i += 1000) {
      const n = Math.min(1000, total - i);
      await trace.recordEntries(box, Array.from({ length: n }, () => ({ actor: "agent" as const, event: "acted" })));
    }
    const all = await readAll(trace, box);
    expect(all).toHaveLength(trace.MEMORY_MAX_ENTRIES_PER_BOX);
    expect(all[0]!.seq).toBe(over);
    expect(all[all.length - 1]!.seq).toBe(total - 1);
    // after before the first kept entry reads from the first kept entry.
    expect((await trace.readTrace(box, { after: 2, limit: 1 })).entries[0]!.seq).toBe(over);
    expect((await trace.readTrace(box, { after: 5000, limit: 1 })).entries[0]!.seq).toBe(5001);
  });

  it("keeps at most MEMORY_MAX_FRAMES_PER_BOX frames per box; a frame another box holds stays", async () => {
    const { trace } = await load("memory");
    const box = newBoxId();
    const other = newBoxId();
    const frames = Array.from({ length: trace.MEMORY_MAX_FRAMES_PER_BOX + 2 }, (_, i) => frame(`cap ${i}`));
    await trace.recordEntry(other, { actor: "agent", event: "frame", screen: 0, frame: frames[0]! });
    for (const f of frames) await trace.recordFrameIfChanged(box, 0, "agent", f);
    expect(await trace.readBoxFrame(box, frames[0]!.hash)).toBeUndefined();
    expect(await trace.readBoxFrame(box, frames[1]!.hash)).toBeUndefined();
    expect(await trace.readBoxFrame(box, frames[2]!.hash)).toEqual(frames[2]!.png);
    expect(await trace.readBoxFrame(box, frames.at(-1)!.hash)).toEqual(frames.at(-1)!.png);
    expect(await trace.readFrame(frames[1]!.hash)).toBeUndefined();
    expect(await trace.readFrame(frames[0]!.hash)).toEqual(frames[0]!.png);
    expect(await trace.readBoxFrame(other, frames[0]!.hash)).toEqual(frames[0]!.png);
    // The entries stay, with their hashes.
    expect(await readAll(trace, box)).toHaveLength(frames.length);
    // Referring to a frame again makes it the newest.
    await trace.recordEntry(box, { actor: "agent", event: "frame", screen: 1, frame: frames[2]! });
    await trace.recordEntry(box, { actor: "agent", event: "frame", screen: 1, frame: frame("one more") });
    expect(await trace.readBoxFrame(box, frames[2]!.hash)).toEqual(frames[2]!.png);
    expect(await trace.readBoxFrame(box, frames[3]!.hash)).toBeUndefined();
  });

  it("keeps traces for at most MEMORY_MAX_BOXES boxes, least recently written dropped first", async () => {
    const { trace } = await load("memory");
    const boxes = Array.from({ length: trace.MEMORY_MAX_BOXES + 1 }, () => newBoxId());
    const f = frame("shared");
    await trace.recordEntry(boxes[0]!, { actor: "agent", event: "frame", screen: 0, frame: f });
    await trace.recordEntry(boxes[0]!, { actor: "agent", event: "acted" });
    for (const id of boxes.slice(1, -1)) await trace.recordEntry(id, { actor: "agent", event: "acted" });
    // Writing to box 1 again keeps it; box 0 is now the least recently written.
    await trace.recordEntry(boxes[1]!, { actor: "agent", event: "acted" });
    await trace.recordEntry(boxes.at(-1)!, { actor: "agent", event: "acted" });
    expect(await trace.readTrace(boxes[0]!)).toEqual({ entries: [], next: null });
    expect(await trace.readFrame(f.hash)).toBeUndefined();
    expect((await trace.readTrace(boxes[1]!)).entries).toHaveLength(2);
    expect((await trace.readTrace(boxes.at(-1)!)).entries).toHaveLength(1);
    // A dropped box that records again goes on from its seq, and is not fresh.
    expect(await trace.traceStartedFresh(boxes[0]!)).toBe(false);
    expect((await trace.recordEntry(boxes[0]!, { actor: "agent", event: "acted" })).seq).toBe(2);
    expect((await trace.readTrace(boxes[2]!)).entries).toHaveLength(0);
  });
});

describe("trace store: local durability", () => {
  it("keeps every entry whose write resolved when the process is killed with SIGKILL", async () => {
    const stateDir = tempDir();
    const boxId = newBoxId();
    const count = 300;
    const child = spawn(process.execPath, ["--import", "tsx", "tests/unit/fixtures/trace-writer.ts", boxId, String(count)], {
      cwd: ROOT,
      env: { ...process.env, HOLM_STORAGE_BACKEND: "local", HOLM_STATE_DIR: stateDir, NODE_ENV: "test" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stderr.on("data", (d) => (err += d));
    const line = await new Promise<string>((resolve, reject) => {
      child.stdout.on("data", (d) => {
        out += d;
        const m = /resolved .*\n/.exec(out);
        if (m) {
          // Killed at once: no close, no checkpoint.
          child.kill("SIGKILL");
          resolve(m[0].trim());
        }
      });
      child.on("exit", (code) => reject(new Error(`the writer exited (${code}) before it resolved: ${err}`)));
    });
    await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(null) : child.once("exit", r)));
    expect(child.signalCode).toBe("SIGKILL");
    const hash = line.split(" ")[2]!;

    const { trace } = await load("local", stateDir);
    const entries = await readAll(trace, boxId);
    expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: count }, (_, i) => i));
    expect(entries.filter((e) => e.event === "frame").map((e) => e.frame)).toEqual([hash]);
    expect(await trace.readBoxFrame(boxId, hash)).toEqual(Buffer.from(`not really a png ${child.pid}`));
    expect(framesOnDisk(stateDir).filter((f) => f.endsWith(".tmp"))).toEqual([]);
    // The reopened store goes on from the recorded seq.
    expect(await trace.traceStartedFresh(boxId)).toBe(false);
    expect((await trace.recordEntry(boxId, { actor: "server", event: "adopted" })).seq).toBe(count);
  }, 60_000);
});

describe("trace routes", () => {
  it("reads a removed box's trace and its frames; hides other workspaces' boxes", async () => {
    delete process.env.HOLM_SERVER_TOKEN;
    // Open mode: the routes act as the server for a loopback peer (no accounts exist here).
    const context = { remoteAddress: "127.0.0.1" };
    const { trace, dbm } = await load("memory");
    const traceRoute = await import("~/routes/v1/box-trace");
    const frameRoute = await import("~/routes/v1/box-trace-frame");
    const pruneRoute = await import("~/routes/v1/jobs-prune");
    const box = newBoxId();
    await insertBox(dbm, box, Date.now());
    const f = frame("route");
    await trace.recordEntries(box, [
      { actor: "server", event: "box_created" },
      { actor: "agent", event: "frame", screen: 0, frame: f },
      { actor: "agent", event: "acted" },
    ]);
    const get = (p: string, params: Record<string, string>, init?: RequestInit) =>
      traceRoute.loader({ request: new Request(`http://holm.test${p}`, init), params, context });

    const res = await get(`/v1/boxes/${box}/trace?after=0&limit=1`, { id: box });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ entries: [{ seq: 1, frame: f.hash }], next: 1 });
    const last = await get(`/v1/boxes/${box}/trace?after=1`, { id: box });
    expect(await last.json()).toMatchObject({ entries: [{ seq: 2 }], next: null });
    for (const q of ["limit=0", "limit=501", "after=-2", "after=x", "other=1"]) {
      const bad = await get(`/v1/boxes/${box}/trace?${q}`, { id: box });
      expect(bad.status, q).toBe(400);
    }
    const missing = await get(`/v1/boxes/box_00000000/trace`, { id: "box_00000000" });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: "not_found" });

    const png = await frameRoute.loader({
      request: new Request(`http://holm.test/v1/boxes/${box}/trace/frames/${f.hash}`),
      params: { id: box, hash: f.hash },
      context,
    });
    expect(png.status).toBe(200);
    expect(png.headers.get("content-type")).toBe("image/png");
    expect(png.headers.get("cache-control")).toContain("immutable");
    expect(Buffer.from(await png.arrayBuffer())).toEqual(f.png);
    const other = newBoxId();
    await insertBox(dbm, other, null);
    const notHers = await frameRoute.loader({
      request: new Request(`http://holm.test/v1/boxes/${other}/trace/frames/${f.hash}`),
      params: { id: other, hash: f.hash },
      context,
    });
    expect(notHers.status).toBe(404);
    expect(await notHers.json()).toMatchObject({ code: "not_found" });

    // A workspace sees only its own boxes.
    const ws = { kind: "workspace", workspaceId: "ws_a", role: "member", via: "key" } as const;
    await expect(trace.traceBox(ws, box)).rejects.toMatchObject({ code: "not_found" });
    const own = newBoxId();
    await insertBox(dbm, own, null, "ws_a");
    expect(await trace.traceBox(ws, own)).toMatchObject({ id: own, removed: false });
    expect(await trace.traceBox({ kind: "server" }, box)).toMatchObject({ id: box, removed: true });

    const pruned = await pruneRoute.loader({ request: new Request("http://holm.test/v1/jobs/prune"), params: {}, context });
    expect(await pruned.json()).toEqual({ frames: 0, entries: 0, boxes: 0 });
  });
});
