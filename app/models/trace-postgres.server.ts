import { type Transaction, sql } from "kysely";
import { FRAME_LOCK } from "../../db/dialect";
import type { Database } from "../../db/schema";
import { db } from "~/utils/db.server";
import type { FrameEntry, Prepared, PruneCutoffs, PruneResult, TraceEntry, TraceEntryInput, TracePage, TraceStore } from "./trace-types.server";
import { PRUNE_CHUNK, boundedSet, frameHash, frameOfBox, makeEntry, prepare, readTracePage } from "./trace-types.server";

// The shared trace store (HOLM_STORAGE_BACKEND=postgres, docs/decisions/0020): entries and frame
// PNGs (`trace_frame.png`, bytea) in PostgreSQL, which several servers may write at once. Unlike
// the local store, nothing here trusts a cache of what another server may have changed:
//
// - A write is one call of the function holm_trace_append (db/migrations/0014-trace-append.ts),
//   one round trip: it locks its box's `trace` row first (an upsert that returns it), then
//   numbers its entries from that row, so two servers writing one box still get gap-free,
//   ordered seqs.
// - Frames against pruning: a write that records frames holds a shared advisory lock
//   (FRAME_LOCK), the prune steps that delete frames hold it alone — the local store's
//   FrameGate, across servers. A frame row is always sent with its bytes, so an upsert that
//   finds it pruned meanwhile inserts it whole again.

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
   * One call of holm_trace_append (migration 0014): one round trip, one transaction, for the
   * whole list. With `unlessFrame`, nothing is written (undefined) when the last frame entry of
   * that screen already has the first item's frame.
   */
  private async write(boxId: string, items: Prepared[], unlessFrame?: number): Promise<TraceEntry[] | undefined> {
    if (unlessFrame !== undefined && (await this.stillLastFrame(boxId, unlessFrame, items[0]!.frame?.hash))) return undefined;
    const now = Date.now();
    const frames = new Map<string, Buffer>();
    for (const p of items) if (p.frame) frames.set(p.frame.hash, p.frame.png);
    const { rows } = await sql<{ seq: number; at_ms: number }>`select seq, at_ms from holm_trace_append(
      ${boxId}, ${now},
      ${items.map((p) => p.actor)}::text[], ${items.map((p) => p.event)}::text[], ${items.map((p) => p.screen ?? null)}::int[],
      ${items.map((p) => p.frame?.hash ?? null)}::text[], ${items.map((p) => p.data_json ?? null)}::text[], ${items.map((p) => p.at_ms ?? null)}::bigint[],
      ${[...frames.keys()]}::text[], ${[...frames.values()]}::bytea[],
      ${unlessFrame ?? null}::int, ${unlessFrame === undefined ? null : (items[0]!.frame?.hash ?? null)}::text)`.execute(db());
    if (rows.length === 0) {
      if (unlessFrame !== undefined) return undefined;
      throw new Error(`trace: nothing recorded for ${boxId}`);
    }
    const out = rows.map((r, i) => makeEntry(Number(r.seq), Number(r.at_ms), items[i]!));
    // What this process knows of the box's frames stays true while no one else writes to it.
    const before = out[0]!.seq;
    const prior = this.known.get(boxId);
    const framesKnown = prior && prior.nextSeq === before ? prior.frames : new Map<number, string | null>();
    items.forEach((p) => {
      if (p.frame) framesKnown.set(p.screen ?? -1, p.frame.hash);
    });
    boundedSet(this.known, boxId, { nextSeq: before + out.length, frames: framesKnown });
    return out;
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

  readTrace(boxId: string, opts: { after: number; limit: number }): Promise<TracePage> {
    return readTracePage(boxId, opts);
  }

  async readFrame(hash: string): Promise<Buffer | undefined> {
    const h = frameHash(hash);
    if (!h) return undefined;
    const row = await db().selectFrom("trace_frame").select("png").where("hash", "=", h).executeTakeFirst();
    return row?.png ?? undefined;
  }

  async readBoxFrame(boxId: string, hash: string): Promise<Buffer | undefined> {
    const h = await frameOfBox(boxId, hash);
    return h ? this.readFrame(h) : undefined;
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
