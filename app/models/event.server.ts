import { EventEmitter } from "node:events";
import type { Kysely, Transaction } from "kysely";
import type { Database } from "../../db/schema";
import { db, lockKey, storeKind } from "~/utils/db.server";
import type { Actor } from "./actor";
import { SERVER_ITSELF, byFields, issuerName } from "./actor-name.server";

export type EventKind =
  | "box.created"
  | "box.ready"
  | "box.paused"
  | "box.stopped"
  | "box.removed"
  | "box.unreachable"
  | "box.failed"
  | "screen.taken_over"
  | "screen.given_back"
  | "screen.browser_restarted"
  | "screen.browser_paused"
  | "image.built"
  | "image.removed";

export interface HolmEvent {
  seq: number;
  at_ms: number;
  kind: EventKind;
  owner?: string;
  box_id?: string;
  runtime?: string;
  data?: Record<string, unknown>;
}

/** In-process fan-out for the console's live views; the table is the record. */
export const events = new EventEmitter();
events.setMaxListeners(0);

/**
 * Records an event, naming who caused it in `data.by` and `data.by_name`: `by`, the actor (the
 * server itself when not given), unless `data` already names an issuer in `by`.
 */
export async function recordEvent(
  kind: EventKind,
  fields: { owner?: string | null; box_id?: string; runtime?: string; data?: Record<string, unknown>; by?: Actor } = {},
): Promise<HolmEvent> {
  const given = fields.data?.by;
  const data = {
    ...fields.data,
    ...(typeof given === "string"
      ? { by_name: typeof fields.data?.by_name === "string" ? fields.data.by_name : await issuerName(given).catch(() => given) }
      : await byFields(fields.by ?? SERVER_ITSELF)),
  };
  fields = { ...fields, data };
  const at_ms = Date.now();
  const values = {
    at_ms,
    kind,
    owner: fields.owner ?? null,
    box_id: fields.box_id ?? null,
    runtime: fields.runtime ?? null,
    data_json: fields.data ? JSON.stringify(fields.data) : null,
  };
  const insert = (q: Kysely<Database> | Transaction<Database>) => q.insertInto("event").values(values).returning("seq").executeTakeFirstOrThrow();
  // Readers follow events by seq (GET /v1/events?after=, the webhook cursor), so a seq must not
  // become visible after a higher one. On SQLite writes are one at a time; on PostgreSQL two
  // inserts take their seqs from the sequence and may commit in the other order, so they take
  // turns: a lock held from before the seq is drawn until the commit.
  const row =
    storeKind() === "postgres"
      ? await db()
          .transaction()
          .execute(async (tx) => {
            await lockKey(tx, "event-seq");
            return insert(tx);
          })
      : await insert(db());
  const event: HolmEvent = { seq: Number(row.seq), at_ms, kind };
  if (fields.owner) event.owner = fields.owner;
  if (fields.box_id) event.box_id = fields.box_id;
  if (fields.runtime) event.runtime = fields.runtime;
  if (fields.data) event.data = fields.data;
  events.emit("event", event);
  return event;
}

export async function listEvents(opts: { owner?: string; after: number; limit: number }) {
  let q = db()
    .selectFrom("event")
    .selectAll()
    .where("seq", ">", opts.after)
    .orderBy("seq")
    .limit(opts.limit + 1);
  if (opts.owner !== undefined) q = q.where("owner", "=", opts.owner);
  const rows = await q.execute();
  const more = rows.length > opts.limit;
  const page = rows.slice(0, opts.limit).map((r) => {
    const e: HolmEvent = { seq: Number(r.seq), at_ms: Number(r.at_ms), kind: r.kind as EventKind };
    if (r.owner) e.owner = r.owner;
    if (r.box_id) e.box_id = r.box_id;
    if (r.runtime) e.runtime = r.runtime;
    if (r.data_json) e.data = JSON.parse(r.data_json);
    return e;
  });
  const next = page.length ? page[page.length - 1]!.seq : opts.after;
  return { events: page, next, more };
}

/** How long the server keeps events (seed 000, Events: "the server keeps events for 7 days"). */
export const EVENT_KEEP_MS = 7 * 24 * 3600 * 1000;

/** Deletes events older than EVENT_KEEP_MS before `now`; part of prune. Returns how many. */
export async function pruneEvents(opts: { now: number }): Promise<number> {
  const out = await db().deleteFrom("event").where("at_ms", "<", opts.now - EVENT_KEEP_MS).executeTakeFirst();
  return Number(out.numDeletedRows);
}
