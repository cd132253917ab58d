import { EventEmitter } from "node:events";
import type { Selectable } from "kysely";
import type { BoxTable } from "../../db/schema";
import { runtime } from "~/runtime/index.server";
import type { Runtime } from "~/runtime/runtime";
import { ApiError, notFound } from "~/utils/api-error.server";
import { db } from "~/utils/db.server";
import { prepared } from "~/utils/prepared-query.server";
import { publicUrl } from "~/utils/env.server";
import { derive, statedServerId } from "~/utils/secret.server";
import { type Actor, ownerOf } from "./actor";
import { leftovers } from "./box-leftovers.server";
import { recordEvent } from "./event.server";
import type { BoxStart, CreatedBy } from "~/protocol/box-console";
import { SERVER_ITSELF, attribution, kindOfIssuer } from "./actor-name.server";
import type { NormalPlacement, NormalSpec } from "./spec.server";
import { recordEntry } from "./trace.server";
import { log } from "~/utils/log.server";

// The box record: its row and JSON, its state changes (one serial chain per box, so a stop
// cannot race a resume), where the server reaches it, and removal. The launch
// (box-launch.server.ts), the public verbs (box.server.ts) and the reaper and adoption
// (box-sync.server.ts) all stand on this module; it imports none of them.

export type BoxState = "starting" | "ready" | "paused" | "stopped" | "unreachable" | "gone" | "failed";

export type BoxRow = Selectable<BoxTable>;

export interface BoxJson {
  id: string;
  runtime: string;
  spec_digest: string;
  state: BoxState;
  reason?: string;
  screens: number;
  width: number;
  height: number;
  /** The console page of screen 0 of this desktop (viewer_urls[0]). */
  viewer_url: string;
  /** One per screen: the console page of that screen of this desktop. */
  viewer_urls: string[];
  /** The CDP proxy's address of screen 0 (for connectOverCDP), on /v1 answers to a caller who may drive. */
  devtools_url?: string;
  created_at_ms: number;
  expires_at_ms: number;
  owner?: string;
  spec: NormalSpec;
  placement: NormalPlacement;
  /** holm's: the name people gave the box, if any (not part of its spec). */
  name?: string;
  /** holm's: labels, `{}` when none. */
  labels: Record<string, string>;
  /** holm's: whether a screen is recorded while a person holds it (PATCH /v1/boxes/{id}). */
  record_takeovers: boolean;
  /** holm's: who created it, by the name it had then. */
  created_by?: CreatedBy;
  /** holm's: how its start went (phases, build progress, the end of its log). */
  start?: BoxStart;
}

/** State changes, for the console's live list and for calls waiting on a paused box. */
export const boxChanges = new EventEmitter();
boxChanges.setMaxListeners(0);

/**
 * The starts under way, by box: their progress changes many times a second while an image
 * builds, so it lives here and the row is written at phase changes only (box-start.server.ts).
 */
const liveStarts = new Map<string, BoxStart>();

/** Shows `start` as the box's start until cleared (`undefined`); the row keeps the last saved. */
export function setLiveStart(id: string, start: BoxStart | undefined) {
  if (start) liveStarts.set(id, start);
  else liveStarts.delete(id);
}

/** The start in progress of a box, if one is (the same object its tracker holds). */
export function liveStart(id: string): BoxStart | undefined {
  return liveStarts.get(id);
}

/** Where the server reaches each running box. Refreshed from the runtime when unknown. */
const addresses = new Map<string, string>();

/** Records where the server reaches a box (box-sync.server.ts, from the runtime). */
export function rememberAddress(id: string, address: string) {
  addresses.set(id, address);
}

/** Drops a box's address, so the next use asks the runtime. */
export function forgetAddress(id: string) {
  addresses.delete(id);
}

/** Where the server reaches a running box, if known. */
export async function boxAddress(id: string): Promise<string | undefined> {
  return addresses.get(id);
}

/** The server's public base, with the host the spec advertises in place of its own (policy.advertise). */
function viewerBase(spec: NormalSpec): string {
  const base = publicUrl();
  if (!spec.policy.advertise) return base;
  const url = new URL(base);
  url.hostname = spec.policy.advertise;
  return url.href.replace(/\/$/, "");
}

/**
 * "Each screen has its own viewer URL", and a resumed stopped box is "new desktop, new viewer
 * URL" (seed 002): the console page of one screen, naming the desktop it shows, so a URL of an
 * earlier desktop is told apart (app/routes/box.tsx says so rather than showing the new one).
 */
function viewerUrls(row: BoxRow, spec: NormalSpec): string[] {
  const base = viewerBase(spec);
  return Array.from({ length: row.screens }, (_, n) => `${base}/boxes/${row.id}?screen=${n}&desktop=${row.desktop}`);
}

export function toBoxJson(row: BoxRow): BoxJson {
  const spec = JSON.parse(row.spec_json) as NormalSpec;
  const urls = viewerUrls(row, spec);
  const out: BoxJson = {
    id: row.id,
    runtime: row.runtime,
    spec_digest: row.spec_digest,
    state: row.state as BoxState,
    screens: row.screens,
    width: row.width,
    height: row.height,
    viewer_url: urls[0]!,
    viewer_urls: urls,
    // devtools_url carries a credential: only GET /v1/boxes/{id} adds it, for a caller who may
    // drive (withDevtoolsUrl, app/models/cdp-access.server.ts; docs/decisions/0011).
    created_at_ms: Number(row.created_at_ms),
    expires_at_ms: Number(row.expires_at_ms),
    spec,
    placement: JSON.parse(row.placement_json),
    labels: {},
    record_takeovers: Number(row.record_takeovers) === 1,
  };
  if (row.reason) out.reason = row.reason;
  if (row.owner) out.owner = row.owner;
  if (row.name) out.name = row.name;
  out.labels = row.labels_json ? (JSON.parse(row.labels_json) as Record<string, string>) : {};
  if (row.created_by) {
    out.created_by = { kind: kindOfIssuer(row.created_by), id: row.created_by, name: row.created_by_name ?? row.created_by };
  }
  const live = liveStarts.get(row.id);
  if (live) out.start = structuredClone(live);
  else if (row.start_json) out.start = JSON.parse(row.start_json) as BoxStart;
  return out;
}

// Lifecycle operations on one box run one after another, so a stop cannot race a resume.
const chains = new Map<string, Promise<unknown>>();

export function serial<T>(id: string, fn: () => Promise<T>): Promise<T> {
  const prev = chains.get(id) ?? Promise.resolve();
  const next = prev.catch(() => {}).then(fn);
  chains.set(id, next);
  void next.finally(() => {
    if (chains.get(id) === next) chains.delete(id);
  }).catch(() => {});
  return next;
}

/**
 * A lifecycle entry in the box's trace, naming who caused it (`by`, `by_name`; the server itself
 * by default); a store failure is logged, never fatal to the operation.
 */
export async function trace(boxId: string, event: string, data: Record<string, unknown> = {}, by: Actor = SERVER_ITSELF) {
  try {
    const who = await attribution(by);
    await recordEntry(boxId, { actor: who.actor, event, data: { ...data, ...who.data } });
  } catch (err) {
    log.error({ err }, `trace ${event} of ${boxId} failed`);
  }
}

const selectRow = prepared(1, (store, id) => store.selectFrom("box").selectAll().where("id", "=", id));

export async function loadRow(id: string): Promise<BoxRow | undefined> {
  return (await selectRow(id))[0];
}

// Two columns, not the row: every box page, ticket, thumbnail and recording Range request asks,
// and the row carries the spec's JSON.
const selectOwner = prepared(1, (store, id) => store.selectFrom("box").select(["owner", "pooled"]).where("id", "=", id));

/** The workspace a box belongs to, removed or not; null for an unknown, pooled or unowned box. */
export async function workspaceOfBox(id: string): Promise<string | null> {
  const row = /^box_[0-9a-f]{8,64}$/.test(id) ? (await selectOwner(id))[0] : undefined;
  return row && !row.pooled ? (row.owner ?? null) : null;
}

export async function setState(row: BoxRow, state: BoxState, reason: string | null, extra: Partial<BoxRow> = {}) {
  const patch = { state, reason, ...extra };
  await db().updateTable("box").set(patch).where("id", "=", row.id).execute();
  Object.assign(row, patch);
  boxChanges.emit("change", toBoxJson(row));
}

/**
 * setState only while the box is not removed and still `expected`, answering whether it wrote: a
 * write from an older look at the box (the reaper's sweep, whose engine took its time) never
 * undoes a newer one (a removal, a pause that landed meanwhile).
 */
export async function setStateIf(row: BoxRow, expected: string, state: BoxState, reason: string | null, extra: Partial<BoxRow> = {}): Promise<boolean> {
  const patch = { state, reason, ...extra };
  const done = await db()
    .updateTable("box")
    .set(patch)
    .where("id", "=", row.id)
    .where("removed_at_ms", "is", null)
    .where("state", "=", expected)
    .executeTakeFirst();
  if (Number(done.numUpdatedRows) === 0) return false;
  Object.assign(row, patch);
  boxChanges.emit("change", toBoxJson(row));
  return true;
}

/** Why a box is `gone` when its runtime answers but has no container for it (removed behind holm's back). */
export const RUNTIME_LOST = "the runtime no longer has the box";

/**
 * Marks a box whose runtime no longer has it `gone` (the reaper's sweep, or a resume that found
 * no container to start), while it is still `seen`: trace entry and `box.unreachable` event, once.
 * Answers whether it wrote. Run in the box's serial chain.
 */
export async function lostToRuntime(row: BoxRow, seen: string): Promise<boolean> {
  if (!(await setStateIf(row, seen, "gone", RUNTIME_LOST, { removed_at_ms: Date.now() }))) return false;
  forgetAddress(row.id);
  // A pool box is no one's until claimed: nothing of its end is written where anyone reads (ADR 0014).
  if (row.pooled) return true;
  await trace(row.id, "gone", { reason: RUNTIME_LOST });
  await recordEvent("box.unreachable", { owner: row.owner, box_id: row.id, runtime: row.runtime });
  return true;
}

export function runtimeOf(row: Pick<BoxRow, "runtime">): Runtime {
  const rt = runtime(row.runtime);
  if (!rt) throw new ApiError("unavailable", `the runtime ${row.runtime} is not configured on this server`);
  return rt;
}

/** Finds a box the actor may see. Another workspace's box is `not_found`, so ids do not leak. */
export async function visibleRow(actor: Actor, id: string): Promise<BoxRow> {
  const row = /^box_[0-9a-f]{8,64}$/.test(id) ? await loadRow(id) : undefined;
  const owner = ownerOf(actor);
  // A pool box is no one's until claimed (pool.server.ts): not even the operator sees it.
  if (!row || row.pooled || (owner !== undefined && row.owner !== owner)) throw notFound(`no box ${id}`);
  if (row.removed_at_ms !== null || row.state === "gone") {
    throw new ApiError("gone", `box ${id} was removed${row.reason ? `: ${row.reason}` : ""}`);
  }
  return row;
}

/** A box that can take a call now: `starting` and `failed` refuse with 409. */
/**
 * Why a box that was running is `failed`: its agent refuses this server's signature
 * (box-key.server.ts). Said whole here, as the reason and in every 409 the box answers.
 */
export const KEY_REFUSED =
  "its agent refuses this server's signature: the server key is not the one that launched it (a store restored " +
  "without its secret.key, or another HOLM_SECRET_KEY), so no call to it can succeed; delete the box, or start the " +
  "server with the key that launched it";

export function requireSettled(row: BoxRow) {
  if (row.state === "starting") throw new ApiError("denied", `box ${row.id} is starting`, { retryable: true });
  if (row.state === "failed") {
    const message = row.reason === KEY_REFUSED ? `box ${row.id} failed: ${KEY_REFUSED}` : `box ${row.id} failed to start: ${row.reason ?? "unknown"}; delete it`;
    throw new ApiError("denied", message, { retryable: false });
  }
}

/**
 * Which server launched a box: derived from the server key, so a restarted server with the same
 * key knows its boxes, and two servers on one engine never take each other's (whose agent
 * secrets they could not use anyway). A store copied with `holm restore --as-new-server` has the
 * same key but its own id, in its state directory, so it takes none of the original's boxes.
 */
let id: string | undefined;
export function serverId(): string {
  return (id ??= statedServerId() ?? derive("server-id").slice(0, 16));
}

/** Removes the container and keeps the record (its history outlives it); `actor` asked for it. */
/**
 * Steps run before a box's container is removed, each bounded by its own code and never failing
 * the removal: a browser profile's flush (profile.server.ts). Registered by the model that needs
 * one, so this module imports none of them.
 */
const beforeRemove = new Set<(row: BoxRow) => Promise<void>>();
export function onBeforeRemove(step: (row: BoxRow) => Promise<void>): void {
  beforeRemove.add(step);
}

/**
 * The same for a stop of a running box (POST …/stop): a browser profile's flush, which closes
 * Chromium so its last 30 s of cookies are written (profile-flush.server.ts). Run in the box's
 * serial chain, so the exit that closing Chromium causes is seen as this stop, not "on its own".
 */
const beforeStop = new Set<(row: BoxRow) => Promise<void>>();
export function onBeforeStop(step: (row: BoxRow) => Promise<void>): void {
  beforeStop.add(step);
}
export async function runBeforeStop(row: BoxRow): Promise<void> {
  for (const step of beforeStop) await step(row).catch((err) => log.error({ err, box: row.id }, "before stopping the box"));
}

/**
 * `pooledBy`: remove a pool box only while it is still that server's and unclaimed, decided by
 * the one conditional update that marks it; otherwise (claimed meanwhile, or taken over by
 * another server) it is left alone and `undefined` is answered.
 */
export async function removeRow(row: BoxRow, reason: string, actor?: Actor): Promise<BoxJson>;
export async function removeRow(row: BoxRow, reason: string, actor: Actor, only: { pooledBy: string }): Promise<BoxJson | undefined>;
export async function removeRow(row: BoxRow, reason: string, actor: Actor = SERVER_ITSELF, only?: { pooledBy: string }): Promise<BoxJson | undefined> {
  // Marked first, outside the chain, so a launch in progress sees it and stops. Only once: a
  // second removal (the reaper's, from a row read before a user's delete) is no second `gone`
  // entry or `box.removed` event.
  const at = Date.now();
  let mark = db().updateTable("box").set({ removed_at_ms: at }).where("id", "=", row.id).where("removed_at_ms", "is", null);
  if (only) mark = mark.where("pooled", "=", 1).where("server_id", "=", only.pooledBy);
  const marked = await mark.executeTakeFirst();
  if (Number(marked.numUpdatedRows) === 0) {
    if (only) return undefined;
    // The removal under way answers for it, once it is done.
    return serial(row.id, async () => toBoxJson((await loadRow(row.id)) ?? row));
  }
  // A start under way stops pushing its progress: nothing may show the box again after `gone`.
  setLiveStart(row.id, undefined);
  return serial(row.id, async () => {
    const cur = (await loadRow(row.id))!;
    for (const step of beforeRemove) await step(cur).catch((err) => log.error({ err, box: cur.id }, "before removing the box"));
    const left = cur.runtime_ref ? await removeContainer(cur, cur.runtime_ref) : undefined;
    const why = left ? `${reason}; ${left}` : reason;
    forgetAddress(row.id);
    await setState(cur, "gone", why, { removed_at_ms: at });
    // A pool box never claimed: no trace or event names it, as none did while it waited (ADR 0014).
    if (cur.pooled) return toBoxJson(cur);
    await trace(cur.id, "gone", { reason: why }, actor);
    await recordEvent("box.removed", { owner: cur.owner, box_id: cur.id, runtime: cur.runtime, data: { why }, by: actor });
    return toBoxJson(cur);
  });
}

// What a client says when the engine is not there to answer (refused, cut off, not resolved).
const NO_ANSWER = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN", "EPIPE"]);

/**
 * Removes the box's container; when its engine does not answer (or refuses), says so instead of
 * failing the removal: the box was already marked removed, and a user asking to remove a box on
 * an engine that went away expects it gone from holm. The container is a leftover the reaper
 * removes once the engine answers (box-sync.server.ts).
 */
async function removeContainer(cur: BoxRow, ref: string): Promise<string | undefined> {
  try {
    await runtimeOf(cur).remove(ref);
    return undefined;
  } catch (err) {
    const e = err as { code?: string; message?: string };
    log.error({ err, box: cur.id }, `box ${cur.id}: its container on the ${cur.runtime} runtime was not removed`);
    const silent = (err instanceof ApiError && err.code === "unavailable") || NO_ANSWER.has(String(e.code)) || /timed out|hang up|not connected/i.test(e.message ?? "");
    const cause = silent ? `the ${cur.runtime} runtime does not answer` : `the ${cur.runtime} runtime refused (${String(e.message).slice(0, 200)})`;
    leftovers.set(cur.id, { boxId: cur.id, runtime: cur.runtime, ref });
    return `its container could not be removed because ${cause}; it is removed when that runtime answers again`;
  }
}
