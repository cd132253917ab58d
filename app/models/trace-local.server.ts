import { randomBytes } from "node:crypto";
import fsp from "node:fs/promises";
import path from "node:path";
import { sql } from "kysely";
import type { TraceEntryTable } from "../../db/schema";
import { db } from "~/utils/db.server";
import type { FrameEntry, Prepared, PruneCutoffs, PruneResult, TraceEntry, TraceEntryInput, TracePage, TraceStore } from "./trace-types.server";
import { INSERT_CHUNK, PRUNE_CHUNK, boundedSet, frameHash, frameOfBox, makeEntry, prepare, readTracePage } from "./trace-types.server";

// The local trace store (HOLM_STORAGE_BACKEND=local): entries in the SQLite store, frame PNGs
// as files under $HOLM_STATE_DIR/frames/<aa>/<hash>.png.

/**
 * Frame files against pruning: recording a frame (check the file, write it, commit the row)
 * holds the gate shared; deleting frame rows and files holds it alone.
 */
class FrameGate {
  private active = 0;
  private closed: Promise<void> | undefined;
  private drained: (() => void) | undefined;

  async shared<T>(fn: () => Promise<T>): Promise<T> {
    while (this.closed) await this.closed;
    this.active++;
    try {
      return await fn();
    } finally {
      if (--this.active === 0) this.drained?.();
    }
  }

  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    while (this.closed) await this.closed;
    let open!: () => void;
    this.closed = new Promise<void>((r) => (open = r));
    try {
      if (this.active > 0) await new Promise<void>((r) => (this.drained = r));
      this.drained = undefined;
      return await fn();
    } finally {
      this.closed = undefined;
      open();
    }
  }
}

interface Head {
  nextSeq: number;
  lastAt: number;
  startedAt: number;
}

export class LocalTraceStore implements TraceStore {
  readonly kind = "local" as const;
  /** Writes to one box's trace run one after another, so seq is gap-free and in order. */
  private chains = new Map<string, Promise<unknown>>();
  /** Cached trace rows (this process is the only writer). */
  private heads = new Map<string, Head>();
  /** box → screen → hash of its last frame entry. */
  private lastFrames = new Map<string, Map<number, string | null>>();
  private gate = new FrameGate();

  constructor(private readonly framesDir: string) {}

  private serial<T>(boxId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.chains.get(boxId) ?? Promise.resolve();
    const next = prev.catch(() => {}).then(fn);
    this.chains.set(boxId, next);
    void next
      .finally(() => {
        if (this.chains.get(boxId) === next) this.chains.delete(boxId);
      })
      .catch(() => {});
    return next;
  }

  framePath(hash: string): string {
    return path.join(this.framesDir, hash.slice(0, 2), `${hash}.png`);
  }

  private async head(boxId: string): Promise<Head> {
    const cached = this.heads.get(boxId);
    if (cached) return cached;
    const row = await db()
      .selectFrom("trace")
      .select(["next_seq", "last_at_ms", "started_at_ms"])
      .where("box_id", "=", boxId)
      .executeTakeFirst();
    const head = row
      ? { nextSeq: Number(row.next_seq), lastAt: Number(row.last_at_ms), startedAt: Number(row.started_at_ms) }
      : { nextSeq: 0, lastAt: 0, startedAt: 0 };
    boundedSet(this.heads, boxId, head);
    return head;
  }

  private async lastFrame(boxId: string, screen: number): Promise<string | null> {
    const screens = this.lastFrames.get(boxId);
    const cached = screens?.get(screen);
    if (cached !== undefined) return cached;
    const row = await db()
      .selectFrom("trace_entry")
      .select("frame")
      .where("box_id", "=", boxId)
      .where("screen", "=", screen)
      .where("frame", "is not", null)
      .orderBy("seq", "desc")
      .limit(1)
      .executeTakeFirst();
    const hash = row?.frame ?? null;
    this.rememberFrame(boxId, screen, hash);
    return hash;
  }

  private rememberFrame(boxId: string, screen: number, hash: string | null) {
    let screens = this.lastFrames.get(boxId);
    if (!screens) boundedSet(this.lastFrames, boxId, (screens = new Map()));
    screens.set(screen, hash);
  }

  async recordEntries(boxId: string, inputs: TraceEntryInput[]): Promise<TraceEntry[]> {
    const items = inputs.map(prepare);
    if (items.length === 0) return [];
    return this.serial(boxId, () => this.write(boxId, items));
  }

  async recordFrameIfChanged(boxId: string, p: FrameEntry): Promise<TraceEntry | undefined> {
    return this.serial(boxId, async () => {
      if ((await this.lastFrame(boxId, p.screen)) === p.frame.hash) return undefined;
      return (await this.write(boxId, [p]))[0];
    });
  }

  /** One transaction for the whole list: committed (WAL) before this resolves. */
  private async write(boxId: string, items: Prepared[]): Promise<TraceEntry[]> {
    const head = await this.head(boxId);
    const now = Date.now();
    let seq = head.nextSeq;
    let lastAt = head.lastAt;
    const rows: TraceEntryTable[] = [];
    const out: TraceEntry[] = [];
    const frames = new Map<string, { png: Buffer; at: number }>();
    for (const p of items) {
      const at = Math.max(p.at_ms ?? now, lastAt);
      lastAt = at;
      rows.push({
        box_id: boxId,
        seq,
        at_ms: at,
        actor: p.actor,
        event: p.event,
        screen: p.screen ?? null,
        frame: p.frame?.hash ?? null,
        data_json: p.data_json ?? null,
      });
      if (p.frame) frames.set(p.frame.hash, { png: p.frame.png, at });
      out.push(makeEntry(seq++, at, p));
    }
    const startedAt = head.nextSeq === 0 ? rows[0]!.at_ms : head.startedAt;
    const commit = async () => {
      for (const [hash, f] of frames) await this.writeFrameFile(hash, f.png);
      await db()
        .transaction()
        .execute(async (trx) => {
          if (frames.size) {
            await trx
              .insertInto("trace_frame")
              .values([...frames].map(([hash, f]) => ({ hash, bytes: f.png.length, created_at_ms: f.at, last_ref_ms: f.at })))
              .onConflict((oc) =>
                oc.column("hash").doUpdateSet({
                  last_ref_ms: sql<number>`case when excluded.last_ref_ms > trace_frame.last_ref_ms then excluded.last_ref_ms else trace_frame.last_ref_ms end`,
                }),
              )
              .execute();
          }
          for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
            await trx.insertInto("trace_entry").values(rows.slice(i, i + INSERT_CHUNK)).execute();
          }
          await trx
            .insertInto("trace")
            .values({ box_id: boxId, next_seq: seq, started_at_ms: startedAt, last_at_ms: lastAt })
            .onConflict((oc) => oc.column("box_id").doUpdateSet({ next_seq: seq, last_at_ms: lastAt }))
            .execute();
        });
    };
    if (frames.size) await this.gate.shared(commit);
    else await commit();
    boundedSet(this.heads, boxId, { nextSeq: seq, lastAt, startedAt });
    for (const r of rows) if (r.frame) this.rememberFrame(boxId, r.screen ?? -1, r.frame);
    return out;
  }

  /** Stores the PNG once per hash: a temp file, fsync'd, renamed, so no reader sees a torn frame. */
  private async writeFrameFile(hash: string, png: Buffer) {
    const file = this.framePath(hash);
    try {
      await fsp.access(file);
      return;
    } catch {
      // not there yet
    }
    const dir = path.dirname(file);
    await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
    const tmp = path.join(dir, `.${hash}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
    try {
      const fh = await fsp.open(tmp, "wx", 0o600);
      try {
        await fh.writeFile(png);
        await fh.sync();
      } finally {
        await fh.close();
      }
      await fsp.rename(tmp, file);
    } catch (err) {
      await fsp.rm(tmp, { force: true }).catch(() => {});
      throw err;
    }
  }

  readTrace(boxId: string, opts: { after: number; limit: number }): Promise<TracePage> {
    return readTracePage(boxId, opts);
  }

  async readFrame(hash: string): Promise<Buffer | undefined> {
    const h = frameHash(hash);
    if (!h) return undefined;
    const row = await db().selectFrom("trace_frame").select("hash").where("hash", "=", h).executeTakeFirst();
    if (!row) return undefined;
    try {
      return await fsp.readFile(this.framePath(h));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw err;
    }
  }

  async readBoxFrame(boxId: string, hash: string): Promise<Buffer | undefined> {
    const h = await frameOfBox(boxId, hash);
    return h ? this.readFrame(h) : undefined;
  }

  async hasTrace(boxId: string): Promise<boolean> {
    return (await this.head(boxId)).nextSeq > 0;
  }

  async prune(cutoff: PruneCutoffs): Promise<PruneResult> {
    let frames = 0;
    let entries = 0;
    let boxes = 0;

    // 1. Frames no entry referred to for a while (the entries keep their hash).
    frames += await this.gate.exclusive(async () => {
      const gone = await db().deleteFrom("trace_frame").where("last_ref_ms", "<", cutoff.frames).returning("hash").execute();
      await this.unlinkFrames(gone.map((r) => r.hash));
      return gone.length;
    });

    // 2. Old entries, a chunk at a time so writers get the store between chunks.
    for (;;) {
      const r = await sql`delete from trace_entry where (box_id, seq) in
        (select box_id, seq from trace_entry where at_ms < ${cutoff.entries} limit ${PRUNE_CHUNK})`.execute(db());
      const n = Number(r.numAffectedRows ?? 0);
      entries += n;
      if (n < PRUNE_CHUNK) break;
    }

    // 3. Whole traces of boxes removed long ago (or that the store no longer knows).
    const dead = await db()
      .selectFrom("trace as t")
      .leftJoin("box as b", "b.id", "t.box_id")
      .select("t.box_id")
      .where((eb) =>
        eb.or([
          eb("b.removed_at_ms", "<", cutoff.removed),
          eb.and([eb("b.id", "is", null), eb("t.last_at_ms", "<", cutoff.removed)]),
        ]),
      )
      .execute();
    for (const { box_id } of dead) {
      entries += await this.serial(box_id, async () => {
        const n = await db()
          .transaction()
          .execute(async (trx) => {
            const r = await trx.deleteFrom("trace_entry").where("box_id", "=", box_id).executeTakeFirst();
            await trx.deleteFrom("trace").where("box_id", "=", box_id).execute();
            return Number(r.numDeletedRows);
          });
        this.heads.delete(box_id);
        this.lastFrames.delete(box_id);
        return n;
      });
      boxes++;
    }

    // 4. Frames no remaining entry refers to, and files a crash left behind.
    frames += await this.gate.exclusive(async () => {
      let n = 0;
      if (entries > 0) {
        const gone = await sql<{ hash: string }>`delete from trace_frame where not exists
          (select 1 from trace_entry e where e.frame = trace_frame.hash) returning hash`.execute(db());
        await this.unlinkFrames(gone.rows.map((r) => r.hash));
        n = gone.rows.length;
      }
      await this.sweepFiles();
      return n;
    });
    return { frames, entries, boxes };
  }

  private async unlinkFrames(hashes: string[]) {
    for (const h of hashes) await fsp.rm(this.framePath(h), { force: true });
  }

  /** Under the exclusive gate no frame write is in flight: temp files and unrecorded PNGs are leftovers. */
  private async sweepFiles() {
    let dirs: string[];
    try {
      dirs = await fsp.readdir(this.framesDir);
    } catch {
      return;
    }
    const known = new Set((await db().selectFrom("trace_frame").select("hash").execute()).map((r) => r.hash));
    for (const d of dirs) {
      if (!/^[0-9a-f]{2}$/.test(d)) continue;
      const dir = path.join(this.framesDir, d);
      for (const f of await fsp.readdir(dir).catch(() => [] as string[])) {
        const leftover = f.endsWith(".tmp") || (f.endsWith(".png") && !known.has(f.slice(0, -4)));
        if (leftover) await fsp.rm(path.join(dir, f), { force: true });
      }
    }
  }
}
