import { type Transaction, sql } from "kysely";
import type { Database, TraceEntryTable } from "../../db/schema";
import { db } from "~/utils/db.server";
import type { FrameEntry, Prepared, PruneCutoffs, PruneResult, TraceActor, TraceEntry, TraceEntryInput, TracePage, TraceStore } from "./trace-types.server";
import { INSERT_CHUNK, PRUNE_CHUNK, boundedSet, clampPage, frameHash, makeEntry, prepare } from "./trace-types.server";

// The shared trace store (HOLM_STORAGE_BACKEND=postgres, docs/decisions/0020): entries and frame
// PNGs (`trace_frame.png`, bytea) in PostgreSQL, which several servers may write at once. Unlike
// the local store, nothing here trusts a cache of what another server may have changed:
//
// - A write locks its box's `trace` row first (an upsert that returns it), then numbers its
//   entries from that row, so two servers writing one box still get gap-free, ordered seqs.
// - Frames against pruning: a transaction that records frames holds a shared advisory lock,
//   the prune steps that delete frames hold it alone — the local store's FrameGate, across
//   servers. A frame row is always sent with its bytes, so an upsert that finds it pruned
//   meanwhile inserts it whole again.

/** The advisory lock key of frames against pruning (any fixed 64-bit number of our own). */
const FRAME_LOCK = 0x686f6c6d_6672;

interface Head {
  nextSeq: number;
  lastAt: number;
  startedAt: number;
}

/** What this process last wrote to a box: valid while the box's next_seq is still `nextSeq`. */
interface Known {
  nextSeq: number;
  /** screen → hash of its last frame entry. */
  frames: Map<number, string | null>;
}

export class PostgresTraceStore implements TraceStore {
  readonly kind = "postgres" as const;
  /** This process's writes to one box run one after another, in call order. */
  private chains = new Map<string, Promise<unknown>>();
  private known = new Map<string, Known>();

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

  async recordEntries(boxId: string, inputs: TraceEntryInput[]): Promise<TraceEntry[]> {
    const items = inputs.map(prepare);
    if (items.length === 0) return [];
    return this.serial(boxId, async () => (await this.write(boxId, items))!);
  }

  async recordFrameIfChanged(boxId: string, p: FrameEntry): Promise<TraceEntry | undefined> {
    return this.serial(boxId, async () => (await this.write(boxId, [p], p.screen))?.[0]);
  }

  /**
   * One transaction for the whole list. With `unlessFrame`, nothing is written (undefined) when
   * the last frame entry of that screen already has the first item's frame.
   */
  private async write(boxId: string, items: Prepared[], unlessFrame?: number): Promise<TraceEntry[] | undefined> {
    if (unlessFrame !== undefined && (await this.stillLastFrame(boxId, unlessFrame, items[0]!.frame?.hash))) return undefined;
    const frames = new Map<string, { png: Buffer; at: number }>();
    const hasFrames = items.some((p) => p.frame);
    const done = await db()
      .transaction()
      .execute(async (trx) => {
        if (hasFrames) await sql`select pg_advisory_xact_lock_shared(${FRAME_LOCK})`.execute(trx);
        const head = await this.lockHead(trx, boxId);
        if (unlessFrame !== undefined && (await this.lastFrame(trx, boxId, head, unlessFrame)) === items[0]!.frame?.hash) return undefined;
        const now = Date.now();
        let seq = head.nextSeq;
        let lastAt = head.lastAt;
        const rows: TraceEntryTable[] = [];
        const out: TraceEntry[] = [];
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
        if (frames.size) {
          await trx
            .insertInto("trace_frame")
            .values([...frames].map(([hash, f]) => ({ hash, bytes: f.png.length, created_at_ms: f.at, last_ref_ms: f.at, png: f.png })))
            .onConflict((oc) => oc.column("hash").doUpdateSet({ last_ref_ms: sql<number>`greatest(excluded.last_ref_ms, trace_frame.last_ref_ms)` }))
            .execute();
        }
        for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
          await trx.insertInto("trace_entry").values(rows.slice(i, i + INSERT_CHUNK)).execute();
        }
        const startedAt = head.nextSeq === 0 ? rows[0]!.at_ms : head.startedAt;
        await trx
          .updateTable("trace")
          .set({ next_seq: seq, last_at_ms: lastAt, started_at_ms: startedAt })
          .where("box_id", "=", boxId)
          .execute();
        return { out, rows, seq, before: head.nextSeq };
      });
    if (!done) return undefined;
    // What this process knows of the box's frames stays true while no one else writes to it.
    const prior = this.known.get(boxId);
    const framesKnown = prior && prior.nextSeq === done.before ? prior.frames : new Map<number, string | null>();
    for (const r of done.rows) if (r.frame) framesKnown.set(r.screen ?? -1, r.frame);
    boundedSet(this.known, boxId, { nextSeq: done.seq, frames: framesKnown });
    return done.out;
  }

  /**
   * A still screen, cheaply: the frame is the last this process wrote on that screen, and the
   * box's next_seq shows no one wrote since — one read, no transaction, no row version. (A write
   * by another server just after the read orders after this check.)
   */
  private async stillLastFrame(boxId: string, screen: number, hash: string | undefined): Promise<boolean> {
    const known = this.known.get(boxId);
    if (!known || hash === undefined || known.frames.get(screen) !== hash) return false;
    const row = await db().selectFrom("trace").select("next_seq").where("box_id", "=", boxId).executeTakeFirst();
    return row !== undefined && Number(row.next_seq) === known.nextSeq;
  }

  /** The box's trace row, made if new, locked until the transaction ends. */
  private async lockHead(trx: Transaction<Database>, boxId: string): Promise<Head> {
    // An upsert that changes nothing still locks the row it finds, and returns it: one round trip.
    const row = await trx
      .insertInto("trace")
      .values({ box_id: boxId, next_seq: 0, started_at_ms: 0, last_at_ms: 0 })
      .onConflict((oc) => oc.column("box_id").doUpdateSet({ box_id: sql<string>`excluded.box_id` }))
      .returning(["next_seq", "last_at_ms", "started_at_ms"])
      .executeTakeFirstOrThrow();
    return { nextSeq: Number(row.next_seq), lastAt: Number(row.last_at_ms), startedAt: Number(row.started_at_ms) };
  }

  /** The hash of the last frame entry of a box's screen: from memory while no one else wrote since. */
  private async lastFrame(trx: Transaction<Database>, boxId: string, head: Head, screen: number): Promise<string | null> {
    const known = this.known.get(boxId);
    if (known && known.nextSeq === head.nextSeq) {
      const hash = known.frames.get(screen);
      if (hash !== undefined) return hash;
    }
    const row = await trx
      .selectFrom("trace_entry")
      .select("frame")
      .where("box_id", "=", boxId)
      .where("screen", "=", screen)
      .where("frame", "is not", null)
      .orderBy("seq", "desc")
      .limit(1)
      .executeTakeFirst();
    const hash = row?.frame ?? null;
    if (known && known.nextSeq === head.nextSeq) known.frames.set(screen, hash);
    else boundedSet(this.known, boxId, { nextSeq: head.nextSeq, frames: new Map([[screen, hash]]) });
    return hash;
  }

  async readTrace(boxId: string, opts: { after: number; limit: number }): Promise<TracePage> {
    const { after, limit } = clampPage(opts);
    const rows = await db()
      .selectFrom("trace_entry")
      .select(["seq", "at_ms", "actor", "event", "screen", "frame", "data_json"])
      .where("box_id", "=", boxId)
      .where("seq", ">", after)
      .orderBy("seq")
      .limit(limit + 1)
      .execute();
    const more = rows.length > limit;
    const entries = (more ? rows.slice(0, limit) : rows).map((r) => {
      const e: TraceEntry = { seq: Number(r.seq), at_ms: Number(r.at_ms), actor: r.actor as TraceActor, event: r.event };
      if (r.screen !== null) e.screen = r.screen;
      if (r.frame !== null) e.frame = r.frame;
      if (r.data_json !== null) e.data = JSON.parse(r.data_json);
      return e;
    });
    return { entries, next: more ? entries[entries.length - 1]!.seq : null };
  }

  async readFrame(hash: string): Promise<Buffer | undefined> {
    const h = frameHash(hash);
    if (!h) return undefined;
    const row = await db().selectFrom("trace_frame").select("png").where("hash", "=", h).executeTakeFirst();
    return row?.png ?? undefined;
  }

  async readBoxFrame(boxId: string, hash: string): Promise<Buffer | undefined> {
    const h = frameHash(hash);
    if (!h) return undefined;
    const ref = await db()
      .selectFrom("trace_entry")
      .select("seq")
      .where("frame", "=", h)
      .where("box_id", "=", boxId)
      .limit(1)
      .executeTakeFirst();
    return ref ? this.readFrame(h) : undefined;
  }

  async hasTrace(boxId: string): Promise<boolean> {
    const row = await db().selectFrom("trace").select("next_seq").where("box_id", "=", boxId).executeTakeFirst();
    return Number(row?.next_seq ?? 0) > 0;
  }

  /** Deletes frames under the frame lock held alone: no frame write is between its check and commit. */
  private async framesAlone<T>(fn: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    return db()
      .transaction()
      .execute(async (trx) => {
        await sql`select pg_advisory_xact_lock(${FRAME_LOCK})`.execute(trx);
        return fn(trx);
      });
  }

  async prune(cutoff: PruneCutoffs): Promise<PruneResult> {
    let entries = 0;
    let boxes = 0;

    // 1. Frames no entry referred to for a while (the entries keep their hash).
    let frames = await this.framesAlone(async (trx) => {
      const r = await trx.deleteFrom("trace_frame").where("last_ref_ms", "<", cutoff.frames).executeTakeFirst();
      return Number(r.numDeletedRows);
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
            // The trace row first: a writer of this box (on any server) waits, or has finished.
            await trx.selectFrom("trace").select("box_id").where("box_id", "=", box_id).forUpdate().execute();
            const r = await trx.deleteFrom("trace_entry").where("box_id", "=", box_id).executeTakeFirst();
            await trx.deleteFrom("trace").where("box_id", "=", box_id).execute();
            return Number(r.numDeletedRows);
          });
        this.known.delete(box_id);
        return n;
      });
      boxes++;
    }

    // 4. Frames no remaining entry refers to.
    if (entries > 0) {
      frames += await this.framesAlone(async (trx) => {
        const r = await sql`delete from trace_frame where not exists
          (select 1 from trace_entry e where e.frame = trace_frame.hash)`.execute(trx);
        return Number(r.numAffectedRows ?? 0);
      });
    }
    return { frames, entries, boxes };
  }
}
