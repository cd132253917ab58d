import { SERVER_ID, clustered, serverAlive } from "~/utils/cluster.server";
import { db } from "~/utils/db.server";
import { env } from "~/utils/env.server";
import { parseBytes } from "~/utils/size";
import { type Actor } from "./actor";
import { SERVER_ITSELF } from "./actor-name.server";
import { allUp } from "./agent.server";
import { keptHealth } from "./agent-http.server";
import { launch, launchLoad } from "./box-launch.server";
import { capacity, refusal } from "./capacity.server";
import { type BoxMetadata, metadataColumns } from "./box-metadata.server";
import { type BoxJson, type BoxRow, boxAddress, boxChanges, loadRow, removeRow, serial, toBoxJson, trace } from "./box-record.server";
import { type Entry, entries, fitsPool, poolPlacement, poolRow, poolRows } from "./pool-row.server";
import { recordEvent } from "./event.server";
import { claiming, drop, ready, readyOf, refilling } from "./pool-ready.server";
import { compactClaims, recordClaim } from "./pool-claims.server";
import { claimWithinLimits } from "./quota.server";
import { type NormalPlacement, type NormalSpec, boxMemory, specDigest } from "./spec.server";
import { log } from "~/utils/log.server";
import { countPoolClaim } from "~/utils/metrics.server";

// The warm pool (HOLM_POOL, ADR 0014): boxes launched ahead of any request, unowned, in no
// workspace's list or quota, counted against HOLM_POOL_MAX_MEMORY. A POST /v1/boxes whose
// normalised spec matches takes one: the claim writes owner, placement, lifetime and metadata
// onto the ready box and starts its trace and events there. A pool box is never touched before
// its claim (no viewer, no call reaches it: visibleRow refuses it), so it has nothing to reset.
// Each server keeps its own pool (ADR 0021): its pool boxes carry its SERVER_ID, and a dead
// server's are taken over by the first live server whose conditional update wins (kept while its
// pool lacks them, removed otherwise), so none is counted twice or left to no one.

const TICK_MS = 2000;
/** How often a clustered server with no pool of its own looks for a dead server's pool boxes. */
const ORPHAN_TICK_MS = 30_000;

const HEALTH_TIMEOUT_MS = 1000;
/**
 * Refills wait for a burst of claims to end: CLAIM_QUIET_MS without a claim, and at most
 * CLAIM_HOLD_MS after the burst's first. A desktop booting takes both cores for a second; an
 * agent creating four boxes at once had its later claims wait on the first claim's refill
 * (bench pool: the fourth claim of each round 25–50 ms, the first 10–15 ms).
 */
const CLAIM_QUIET_MS = 250;
const CLAIM_HOLD_MS = 1000;

/**
 * A spec whose pool boxes keep failing to start (killed as they boot, an engine refusing) is
 * launched again one box at a time, after 1 s, 2 s, 4 s… up to 30 s: at once, it booted a desktop
 * every second for nothing, the CPU the claims need. A box that starts ends the wait.
 */
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 30_000;
const failing = new Map<string, { count: number; until: number }>();

let timer: NodeJS.Timeout | undefined;
let orphanTimer: NodeJS.Timeout | undefined;
let ticking: Promise<void> | undefined;
let again = false;

async function healthy(row: BoxRow): Promise<boolean> {
  const address = await boxAddress(row.id);
  return !!address && allUp(await keptHealth(row.id, address, HEALTH_TIMEOUT_MS), row.screens);
}

/** Pool boxes being removed: a sweep neither waits for one nor removes it twice. */
const retiring = new Set<string>();

/** Removes a pool box (only while it is still this server's and unclaimed), saying why in its removal. */
export async function retire(row: BoxRow, why: string) {
  drop(row.spec_digest, row.id);
  if (retiring.has(row.id)) return;
  retiring.add(row.id);
  log.info(`pool: removing ${row.id}: ${why}`);
  // Only while it is still this server's unclaimed pool box, decided in the store: it may have
  // been claimed since it was read (by a server on a version from before migration 0020, too).
  await removeRow(row, `pool: ${why}`, SERVER_ITSELF, { pooledBy: SERVER_ID })
    .then((gone) => gone || log.info(`pool: ${row.id} was claimed or taken over meanwhile: kept`))
    .catch((err) => log.error({ err }, `pool: removing ${row.id}`))
    .finally(() => retiring.delete(row.id));
}

type ClaimInput = {
  spec: NormalSpec;
  placement: NormalPlacement;
  metadata?: BoxMetadata;
  owner: string | null;
  by: { id: string | null; name: string | null };
};

/**
 * Takes a ready pool box for this create, or undefined when none fits (the caller launches cold).
 * Quota refusals are thrown as a cold create's would be.
 */
export async function claimFromPool(actor: Actor, input: ClaimInput): Promise<BoxJson | undefined> {
  if (!env().HOLM_POOL || !fitsPool(input.placement)) return undefined;
  const digest = specDigest(input.spec);
  const list = ready.get(digest);
  for (let id = list?.shift(); id; id = list?.shift()) {
    // Off the list but maybe put back (a quota refusal): the refill counts it meanwhile, or it
    // launched a box beyond the pool's size each time a refused claim held the last one.
    claiming.set(digest, (claiming.get(digest) ?? 0) + 1);
    try {
      const box = await claimOne(actor, input, id, list!);
      if (box) return box;
    } finally {
      claiming.set(digest, claiming.get(digest)! - 1);
    }
  }
  // A miss only for a spec the pool keeps boxes of (the hit rate's denominator).
  if (list || refilling.has(digest)) countPoolClaim(false);
  return undefined;
}

/** Claims pool box `id`, taken off `list`: the box, or undefined when it is no longer to be had (the next is tried). */
async function claimOne(actor: Actor, input: ClaimInput, id: string, list: string[]): Promise<BoxJson | undefined> {
  const row = await loadRow(id);
  if (!row || !row.pooled || row.removed_at_ms !== null || row.state !== "ready") return undefined;
  const now = Date.now();
  const patch = {
    owner: input.owner,
    placement_json: JSON.stringify(input.placement),
    created_at_ms: now,
    expires_at_ms: now + input.placement.expires_after_secs * 1000,
    idle_timeout_secs: input.placement.idle_timeout_secs ?? null,
    last_used_ms: now,
    ...metadataColumns(input.metadata),
    created_by: input.by.id,
    created_by_name: input.by.name,
  };
  // The claim and the health probe at once: a box whose desktop stopped answering since the
  // last sweep is given back and removed, never handed out; the next one is tried.
  const [claimed, ok] = await Promise.all([claimWithinLimits(input.owner, id, patch).catch((err: unknown) => err as Error), healthy(row)]);
  if (claimed instanceof Error) {
    if (ok) list.unshift(id);
    else void retire(row, "its desktop stopped answering");
    throw claimed;
  }
  if (!claimed) return undefined;
  if (!ok) {
    await db().updateTable("box").set({ pooled: 1, owner: null }).where("id", "=", id).execute();
    void retire({ ...row, pooled: 1 }, "its desktop stopped answering");
    return undefined;
  }
  Object.assign(row, patch, { pooled: 0 });
  refillAfterClaims();
  // On the memory store the containers are all a restarted server has: the claim is kept on
  // the host before the caller hears of the box, so it is never adopted back into the pool.
  if (env().HOLM_STORAGE_BACKEND === "memory") {
    try {
      recordClaim(id, row);
    } catch (err) {
      // Unkept, a restart would take the box back into the pool: it goes, the next is tried.
      log.error({ err }, `pool: recording the claim of ${id} failed`);
      await db().updateTable("box").set({ pooled: 1, owner: null }).where("id", "=", id).execute();
      void retire({ ...row, pooled: 1, owner: null }, "its claim could not be recorded");
      return undefined;
    }
  }
  await trace(id, "box_created", { spec: input.spec, placement: input.placement, claimed_from_pool: true }, actor);
  await trace(id, "ready");
  const box = toBoxJson(row);
  boxChanges.emit("change", box);
  await recordEvent("box.created", { owner: row.owner, box_id: id, runtime: row.runtime, by: actor, data: { claimed_from_pool: true } });
  await recordEvent("box.ready", { owner: row.owner, box_id: id, runtime: row.runtime });
  countPoolClaim(true);
  return box;
}

async function launchOne(entry: Entry & { spec: NormalSpec }) {
  const now = Date.now();
  const placement = poolPlacement();
  const row = poolRow(entry.digest, entry.spec, placement, now);
  refilling.set(entry.digest, (refilling.get(entry.digest) ?? 0) + 1);
  try {
    await db().insertInto("box").values(row).execute();
    await serial(row.id, () => launch(row));
    const after = await loadRow(row.id);
    if (after?.state === "ready" && after.pooled && after.removed_at_ms === null) {
      readyOf(entry.digest).push(row.id);
      failing.delete(entry.digest);
      log.info(`pool: ${row.id} ready (${readyOf(entry.digest).length} of ${entry.size} ${entry.key})`);
    } else if (after?.state === "failed") {
      const count = (failing.get(entry.digest)?.count ?? 0) + 1;
      const wait = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (count - 1));
      failing.set(entry.digest, { count, until: Date.now() + wait });
      log.error(`pool: a ${entry.key} box did not start (${count} in a row; the next in ${wait / 1000} s): ${after.reason}`);
    }
  } finally {
    refilling.set(entry.digest, (refilling.get(entry.digest) ?? 1) - 1);
    kick();
  }
}

/**
 * Takes over the pool boxes of servers that are gone (a restart's earlier process among them):
 * each row by one server only (a conditional update of its server_id). A ready box that answers
 * joins this pool while it lacks one of its spec; the rest are removed. Rows from before
 * migration 0020 (no server_id) count as a dead server's at boot only: every server is stopped
 * before an upgrade across it (README "Several servers"), so at boot no server on the old version
 * runs. Answers how many were kept and removed.
 */
async function takeOverOrphans(atBoot: boolean): Promise<{ back: number; removed: number }> {
  const rows = await db()
    .selectFrom("box")
    .selectAll()
    .where("pooled", "=", 1)
    .where("removed_at_ms", "is", null)
    .where("state", "!=", "gone")
    .where((eb) => (atBoot ? eb.or([eb("server_id", "is", null), eb("server_id", "!=", SERVER_ID)]) : eb("server_id", "!=", SERVER_ID)))
    .execute();
  let [back, removed] = [0, 0];
  if (rows.length === 0) return { back, removed };
  const sizes = new Map((await entries()).map((e) => [e.digest, e.size]));
  // Within HOLM_POOL_MAX_MEMORY as a refill is: a restart with a smaller budget took back them all.
  const [each, budget] = [parseBytes(boxMemory(poolPlacement())), parseBytes(env().HOLM_POOL_MAX_MEMORY)];
  let held = (await poolRows()).length * each;
  // Only a server known dead gives its pool up: one Redis has not heard from yet ("unknown") keeps it.
  const alive = new Map<string, boolean>();
  for (const row of rows) {
    const was = row.server_id;
    if (was !== null && (alive.get(was) ?? alive.set(was, (await serverAlive(was)) !== "dead").get(was))) continue;
    // A box its dead server was still starting is box-sync's (failed and removed there).
    if (row.state === "starting") continue;
    const won = await db()
      .updateTable("box")
      .set({ server_id: SERVER_ID })
      .where("id", "=", row.id)
      .where("pooled", "=", 1)
      .where((eb) => (was === null ? eb("server_id", "is", null) : eb("server_id", "=", was)))
      .executeTakeFirst();
    if (Number(won.numUpdatedRows) === 0) continue;
    const full = (ready.get(row.spec_digest)?.length ?? 0) + (refilling.get(row.spec_digest) ?? 0) >= (sizes.get(row.spec_digest) ?? 0) || held + each > budget;
    if (row.state === "ready" && !full && (await healthy(row))) {
      readyOf(row.spec_digest).push(row.id);
      held += each;
      back++;
    } else {
      const why = row.state === "failed" ? "its launch failed" : row.state === "ready" && full ? "its server is gone" : "it did not come back ready after a restart";
      void retire(row, why);
      removed++;
    }
  }
  if (back || removed) log.info(`pool: ${back} box(es) back in the pool, ${removed} removed`);
  return { back, removed };
}

/** One sweep: drops pool boxes that stopped answering, then launches what the pool lacks. */
async function sweep(): Promise<void> {
  // Without Redis there is one server: an earlier process's pool boxes were taken over at boot.
  if (clustered()) await takeOverOrphans(false);
  // A pool box paused, stopped or unreachable (the reaper saw it so) is of no use: it goes. So
  // does one whose launch failed: no one can see or remove its row (nor the start log in it), and
  // a spec whose boxes keep failing left one every 30 s until the pool lifetime (30 days) ended.
  const stray = await db()
    .selectFrom("box")
    .selectAll()
    .where("pooled", "=", 1)
    .where("server_id", "=", SERVER_ID)
    .where("removed_at_ms", "is", null)
    .where("state", "not in", ["starting", "ready", "gone"])
    .execute();
  // Not waited for: a removal can take long (a frozen box's waited 30 s on its recordings before
  // that wait had a limit), and the refill waited behind it. Its memory counts below until it is gone.
  for (const row of stray) void retire(row, row.state === "failed" ? "its launch failed" : `it is ${row.state}`);
  const rows = await poolRows();
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const [digest, list] of ready) {
    for (const id of [...list]) {
      const row = byId.get(id);
      if (!row || row.state !== "ready") drop(digest, id);
      else if (!(await healthy(row))) void retire(row, "its desktop stopped answering");
    }
  }
  const e = env();
  const budget = parseBytes(e.HOLM_POOL_MAX_MEMORY);
  const each = parseBytes(boxMemory(poolPlacement()));
  let held = rows.length * each;
  // Refills use half the start slots (desktops booting starve everything else of CPU, claims
  // included) and never queue behind callers' launches (box-launch.server.ts).
  const slots = Math.max(1, Math.floor(e.HOLM_LAUNCH_CONCURRENCY / 2));
  for (const entry of await entries()) {
    if (!entry.spec) continue;
    const failed = failing.get(entry.digest);
    if (failed && (Date.now() < failed.until || refilling.get(entry.digest))) continue;
    const have = () => (ready.get(entry.digest)?.length ?? 0) + (refilling.get(entry.digest) ?? 0) + (claiming.get(entry.digest) ?? 0);
    while (have() < entry.size && held + each <= budget && !(failed && refilling.get(entry.digest))) {
      if (claimBurst) return;
      const load = launchLoad();
      const mine = [...refilling.values()].reduce((a, b) => a + b, 0);
      if (mine >= slots || load.waiting > 0 || load.starting >= e.HOLM_LAUNCH_CONCURRENCY) return;
      // The pool never takes the machine's last room from callers (ADR 0016): no refill where a
      // caller's create would be refused.
      if (refusal(await capacity())) return;
      held += each;
      void launchOne({ ...entry, spec: entry.spec }).catch((err) => log.error({ err }, "pool: launch failed"));
    }
  }
}

/** Claims in the current burst: the refill they call for waits until it ends. */
let claimBurst: { timer: NodeJS.Timeout; since: number } | undefined;

function refillAfterClaims() {
  const at = performance.now();
  const since = claimBurst?.since ?? at;
  if (claimBurst) clearTimeout(claimBurst.timer);
  const wait = Math.max(0, Math.min(CLAIM_QUIET_MS, since + CLAIM_HOLD_MS - at));
  const timer = setTimeout(() => {
    claimBurst = undefined;
    kick();
  }, wait);
  timer.unref();
  claimBurst = { timer, since };
}

/** Runs a sweep soon (after a claim burst, or when a refill ends), never two at once. */
function kick() {
  if (!timer) return;
  if (ticking) {
    again = true;
    return;
  }
  ticking = sweep()
    .catch((err) => log.error({ err }, "pool"))
    .finally(() => {
      ticking = undefined;
      if (again) {
        again = false;
        kick();
      }
    });
}

/**
 * At boot, after adoption: pool boxes of servers that are gone (this one's earlier process) that
 * came back and answer go back in the pool, as many as it keeps; the rest are removed
 * (takeOverOrphans, which each sweep runs again). Then the refills begin.
 */
export async function startPool(adoption: { scanned: boolean }): Promise<void> {
  // Only once adoption has listed the engine's boxes: the store knows none before, and cutting
  // the claims down to none handed claimed boxes back out as pool boxes at the next boot.
  if (env().HOLM_STORAGE_BACKEND === "memory" && adoption.scanned) {
    const live = await db().selectFrom("box").select("id").where("removed_at_ms", "is", null).execute();
    compactClaims(new Set(live.map((r) => r.id)));
  }
  // Without a pool of its own a server still removes the pool boxes of servers that are gone:
  // at boot (its own earlier process's among them) and, in a cluster, as other servers die. No
  // sweep every 2 s for a pool it does not keep.
  await takeOverOrphans(true);
  if (!env().HOLM_POOL) {
    if (clustered()) {
      orphanTimer = setInterval(() => {
        ticking ??= takeOverOrphans(false)
          .then(() => undefined)
          .catch((err) => log.error({ err }, "pool: taking over a dead server's pool boxes"))
          .finally(() => (ticking = undefined));
      }, ORPHAN_TICK_MS);
      orphanTimer.unref();
    }
    return;
  }
  timer = setInterval(kick, TICK_MS);
  timer.unref();
  kick();
}

export async function stopPool(): Promise<void> {
  if (timer) clearInterval(timer);
  if (orphanTimer) clearInterval(orphanTimer);
  orphanTimer = undefined;
  if (claimBurst) clearTimeout(claimBurst.timer);
  claimBurst = undefined;
  timer = undefined;
  await ticking;
}
