import { DEFAULT_RUNTIME, runtime, storedRuntimes } from "~/runtime/index.server";
import { EngineTimeout, engineTimeoutMs, orAfter } from "~/runtime/engine-bound.server";
import type { Runtime } from "~/runtime/runtime";
import { ApiError } from "~/utils/api-error.server";
import { SERVER_ID, clustered, serverAlive, withClusterLock } from "~/utils/cluster.server";
import { db } from "~/utils/db.server";
import {
  type BoxRow,
  type BoxState,
  forgetAddress,
  loadRow,
  lostToRuntime,
  rememberAddress,
  removeRow,
  runtimeOf,
  serial,
  setState,
  setStateIf,
  trace,
  serverId,
  boxChanges,
  toBoxJson,
} from "./box-record.server";
import { startAdoptedTrace } from "./adopted-trace.server";
import { failIfKeyRefused } from "./box-key.server";
import { LATE_CREATE_MS, leftovers, removeLeftovers } from "./box-leftovers.server";
import { abandonedStart } from "./box-start.server";
import { endedBecause } from "./box-exit.server";
import { noteBrowserRestarts } from "./browser-restarts.server";
import { recordEvent } from "./event.server";
import { readClaims } from "./pool-claims.server";
import { type NormalPlacement, type NormalSpec, specDigest } from "./spec.server";
import { log } from "~/utils/log.server";

// Keeping the records in line with the runtime: the reaper (expired, idle and vanished boxes)
// and, at start, taking back the boxes an earlier server made. It stands on the box record
// (box-record.server.ts), as box.server.ts does, so neither imports the other.

async function liveRows(): Promise<BoxRow[]> {
  return db().selectFrom("box").selectAll().where("removed_at_ms", "is", null).where("state", "!=", "gone").execute();
}

/** How long the reaper and boot wait for an engine's ping before its boxes are `unreachable`. */
const PING_MS = 5_000;
/** How long a sweep waits for one runtime's rows; the rest goes on alone, and later sweeps skip that runtime until it ends. */
const SWEEP_WAIT_MS = 20_000;

/** Each runtime's answer to one ping, asked once per sweep and bounded: a frozen engine costs 5 s, not one wait per box. */
type Pings = Map<string, Promise<boolean>>;

function answers(name: string, pings?: Pings): Promise<boolean> {
  const rt = runtime(name);
  if (!rt) return Promise.resolve(false);
  const asked = pings?.get(name) ?? orAfter(rt.ping().catch(() => false), PING_MS, false);
  pings?.set(name, asked);
  return asked;
}

/** The runtimes whose rows a sweep is still going through (one whose engine is slow). */
const sweeping = new Map<string, Promise<number>>();

/**
 * Removes expired and idle boxes and brings records in line with the runtime. Each runtime's
 * rows are gone through on their own, side by side, so an engine that does not answer delays
 * only its own boxes (review I): the local box that expires meanwhile is still removed on time.
 */
export async function reapBoxes(now = Date.now()): Promise<{ removed: number }> {
  const byRuntime = new Map<string, BoxRow[]>();
  for (const row of await liveRows()) byRuntime.set(row.runtime, [...(byRuntime.get(row.runtime) ?? []), row]);
  for (const left of leftovers.values()) if (!byRuntime.has(left.runtime)) byRuntime.set(left.runtime, []);
  const pings: Pings = new Map();
  const counts = [...byRuntime].map(([name, rows]) => {
    if (sweeping.has(name)) return Promise.resolve(0);
    const run = reapRows(rows, now, pings)
      .then(async (n) => (await removeLeftovers(name, () => answers(name, pings)), n))
      .finally(() => sweeping.delete(name));
    sweeping.set(name, run);
    return orAfter(run, SWEEP_WAIT_MS, 0);
  });
  return { removed: (await Promise.all(counts)).reduce((a, b) => a + b, 0) };
}

/**
 * Waits for the sweeps still going through a runtime's rows, as long as one can take once its engine
 * stops answering (a ping, then one bound): shutdown must not close the store under a sweep, nor a test's next server find its writes.
 */
export async function sweepsDone(): Promise<void> {
  await orAfter(Promise.allSettled([...sweeping.values()]).then(() => undefined), PING_MS + 2 * engineTimeoutMs(), undefined);
}

async function reapRows(rows: BoxRow[], now: number, pings: Pings): Promise<number> {
  let removed = 0;
  for (const read of rows) {
    try {
      // The rows were read when the sweep began, and an engine that does not answer makes a
      // sweep long: each is read again, so a box removed, paused or given more time meanwhile
      // is taken as it is now.
      const row = await loadRow(read.id);
      if (!row || row.removed_at_ms !== null || row.state === "gone") continue;
      if (now >= Number(row.expires_at_ms)) {
        await removeRow(row, "expired: the box passed its deadline");
        removed++;
      } else if (row.idle_timeout_secs && now - Number(row.last_used_ms) >= row.idle_timeout_secs * 1000) {
        await removeRow(row, `idle: unused for ${row.idle_timeout_secs} s`);
        removed++;
      } else if (row.state === "starting") {
        // Without Redis there is one server (ADR 0021): an earlier process's starts are its boot's.
        if (clustered()) await abandonIfOrphaned(row, false);
      } else if ((await reconcile(row, pings)) === "forgotten") {
        removed++;
      }
    } catch (err) {
      log.error({ err }, `reaper: box ${read.id}`);
    }
  }
  return removed;
}

/**
 * A `starting` box whose server process is gone (restarted, killed) will never finish: it is
 * failed and its container removed. One that a live server is starting is left alone: servers
 * share the store, and a server booting beside another (a rolling restart) must not end its work.
 * Rows from before migration 0020 name no server: they are taken as a dead server's at boot, as
 * before, and left to the server starting them otherwise. Conditional on the row, so of two
 * servers that find it, one fails it.
 */
async function abandonIfOrphaned(row: BoxRow, atBoot: boolean): Promise<void> {
  if (row.server_id === SERVER_ID || (row.server_id === null ? !atBoot : (await serverAlive(row.server_id)) !== "dead")) return;
  const reason = atBoot ? "the server restarted while the box was starting" : "the server starting the box stopped before it was ready";
  const patch = { state: "failed", reason, ...abandonedStart(row) };
  const done = await db()
    .updateTable("box")
    .set(patch)
    .where("id", "=", row.id)
    .where("state", "=", "starting")
    .where((eb) => (row.server_id === null ? eb("server_id", "is", null) : eb("server_id", "=", row.server_id)))
    .executeTakeFirst();
  if (Number(done.numUpdatedRows) === 0) return;
  Object.assign(row, patch);
  boxChanges.emit("change", toBoxJson(row));
  log.info({ box: row.id, server: row.server_id }, reason);
  if (row.runtime_ref) await runtimeOf(row).remove(row.runtime_ref);
  // Killed between the engine's create and writing its id down: found by its holm.box label (late too).
  else leftovers.set(row.id, { boxId: row.id, runtime: row.runtime, ref: null, lookUntil: Date.now() + LATE_CREATE_MS });
}

/**
 * Syncs one record with what the runtime reports. Each write is in the box's serial chain and
 * conditional on the state this look began from (setStateIf): an answer that took the engine
 * its time never undoes what happened meanwhile (a removal, a pause).
 */
async function reconcile(row: BoxRow, pings?: Pings): Promise<"kept" | "forgotten"> {
  const rt = runtime(row.runtime);
  const seen = row.state;
  const write = (state: BoxState, reason: string | null, extra: Partial<BoxRow> = {}) =>
    serial(row.id, () => setStateIf(row, seen, state, reason, extra));
  const away = async () => {
    if (seen !== "unreachable" && (await write("unreachable", `the ${row.runtime} runtime does not answer`)) && !row.pooled) {
      await recordEvent("box.unreachable", { owner: row.owner, box_id: row.id, runtime: row.runtime });
    }
    return "kept" as const;
  };
  // A failed box stays failed, with why, whether or not its engine answers now.
  if (row.state === "failed") return "kept";
  if (!rt || !(await answers(row.runtime, pings))) return away();
  let info: Awaited<ReturnType<Runtime["inspect"]>> | undefined;
  try {
    info = row.runtime_ref ? await rt.inspect(row.runtime_ref) : undefined;
  } catch (err) {
    // It answered the ping, then stopped answering (ADR 0019: its boxes are `unreachable`). The
    // rest of this sweep (or boot) takes it as not answering: one bound, not one per box.
    if (err instanceof EngineTimeout) {
      pings?.set(row.runtime, Promise.resolve(false));
      return away();
    }
    throw err;
  }
  if (!info || info.state === "missing") {
    return (await serial(row.id, () => lostToRuntime(row, seen))) ? "forgotten" : "kept";
  }
  if (info.state === "unreachable") {
    // The runtime answers but not for this box (its swarm node is down or drained): kept, with why.
    forgetAddress(row.id);
    const why = info.reason ?? `the ${row.runtime} runtime cannot reach the box`;
    if ((seen !== "unreachable" || row.reason !== why) && (await write("unreachable", why)) && seen !== "unreachable" && !row.pooled) {
      await trace(row.id, "unreachable", { reason: why });
      await recordEvent("box.unreachable", { owner: row.owner, box_id: row.id, runtime: row.runtime, data: { why } });
    }
    return "kept";
  }
  const state: BoxState = info.state === "running" ? "ready" : info.state === "paused" ? "paused" : "stopped";
  if (info.address) rememberAddress(row.id, info.address);
  if (state === "stopped" && (seen === "ready" || seen === "paused")) await stoppedOnItsOwn(row, rt);
  else if (state !== seen) await write(state, null);
  return "kept";
}

/**
 * A box whose container ended without anyone stopping it (Chromium or another part died, and the
 * entrypoint stopped the box): `stopped`, with the reason its log gives, a trace entry and a
 * `box.stopped` event, as a stop through /v1 has. In the box's serial chain, on its current row,
 * so a stop or resume in progress is not overwritten.
 */
async function stoppedOnItsOwn(row: BoxRow, rt: Runtime): Promise<void> {
  // Under the box's lock across servers too: another server's stop, whose exit this is, is recorded first.
  await serial(row.id, () => withClusterLock(`box:${row.id}`, async () => {
    const cur = await loadRow(row.id);
    if (!cur || cur.removed_at_ms !== null || (cur.state !== "ready" && cur.state !== "paused")) return;
    const now = cur.runtime_ref ? await rt.inspect(cur.runtime_ref) : undefined;
    // Removed by now (`docker rm -f`: the exit, then the removal): gone, as the reaper would say.
    if (now?.state === "missing") return void (await lostToRuntime(cur, cur.state));
    if (now && now.state !== "stopped") return;
    forgetAddress(cur.id);
    const lines = cur.runtime_ref ? await rt.logs(cur.runtime_ref, 40).catch(() => []) : [];
    // How it ended as the engine says; the box's output only quoted, any process in it can print (box-exit.server.ts).
    const reason = `the box stopped on its own: ${endedBecause(now?.exit, lines, "its container exited")}`;
    await setState(cur, "stopped", reason);
    Object.assign(row, { state: cur.state, reason });
    log.info({ box: cur.id, reason }, "box stopped on its own");
    if (cur.pooled) return; // no one's until claimed: the pool removes it, nothing names it (ADR 0014)
    await noteBrowserRestarts(cur).then(() => trace(cur.id, "stopped", { reason })); // its browser's restarts first
    await recordEvent("box.stopped", { owner: cur.owner, box_id: cur.id, runtime: cur.runtime, data: { why: reason } });
  }));
}

/**
 * After a call to a box's agent failed in a way a stopped box explains (refused, unreachable,
 * or answered by another box's agent at its old address: "bad signature"): asks the runtime now
 * rather than at the reaper's next sweep. Returns the box's state after the check.
 */
export async function recheckBox(id: string): Promise<BoxState | undefined> {
  const row = await loadRow(id);
  if (!row || row.removed_at_ms !== null) return "gone";
  if (row.state === "starting" || row.state === "failed") return row.state as BoxState;
  forgetAddress(id);
  await reconcile(row).catch((err) => log.error({ err }, `recheck: box ${id}`));
  return ((await loadRow(id))?.state ?? "gone") as BoxState;
}

/**
 * After a call found no way into box `id` (no address, refused, another agent there): the 409 to
 * answer when the runtime says the box stopped or went (recorded so, with why), else undefined.
 */
export async function stoppedError(id: string): Promise<ApiError | undefined> {
  const state = await recheckBox(id).catch(() => undefined);
  if (state !== "stopped" && state !== "gone") return undefined;
  const why = (await loadRow(id))?.reason;
  const then = state === "stopped" ? "; resume it first" : "";
  return new ApiError("screen_unavailable", `box ${id} is ${state}${why ? ` (${why})` : ""}${then}`, { retryable: false });
}

/**
 * Watches every runtime that reports its containers' exits, so a box that stops on its own is
 * `stopped` (with why) within moments rather than at the reaper's next sweep, and the server
 * stops calling its old address. Returns the function that stops watching.
 */
export function watchBoxExits(): () => void {
  const stops: (() => void)[] = [];
  for (const [name, rt] of [[DEFAULT_RUNTIME, runtime(DEFAULT_RUNTIME)] as const, ...storedRuntimes()]) {
    if (!rt?.watchExits) continue;
    stops.push(
      rt.watchExits((ref) => {
        void (async () => {
          const row = await db()
            .selectFrom("box")
            .selectAll()
            .where("runtime", "=", name)
            .where("runtime_ref", "=", ref)
            .where("removed_at_ms", "is", null)
            .executeTakeFirst();
          // `stopped` too: a container removed after it exited makes its box `gone` now.
          if (row && (row.state === "ready" || row.state === "paused" || row.state === "stopped")) await reconcile(row);
        })().catch((err) => log.error({ err }, "a box's exit"));
      }),
    );
  }
  return () => stops.forEach((stop) => stop());
}

/**
 * At start: takes back each recorded box, then scans the runtime's labels for boxes an earlier
 * server made that the store does not know (the memory store forgets everything).
 */
export async function adoptBoxes(): Promise<{ adopted: number; known: number; scanned: boolean }> {
  let adopted = 0;
  const rows = await liveRows();
  const known = new Set(rows.map((r) => r.id));
  // One bounded ping per runtime: a server started while an engine is frozen still comes up.
  const pings: Pings = new Map();
  for (const row of rows) {
    try {
      // With the memory store a box taken back starts a new trace (a pool box has none yet).
      await startAdoptedTrace(row);
      if (row.state === "starting") await abandonIfOrphaned(row, true);
      else await reconcile(row, pings);
    } catch (err) {
      log.error({ err }, `adopt: box ${row.id}`);
    }
  }
  // A running box whose agent refuses this server's key (a store restored without it) is failed
  // now, not at its first call: each agent asked once, side by side and bounded (box-key.server.ts).
  await Promise.all(rows.map((r) => failIfKeyRefused(r).catch((err) => log.error({ err }, `adopt: box ${r.id}'s key`))));
  const rt = runtime(DEFAULT_RUNTIME)!;
  if (!(await answers(DEFAULT_RUNTIME, pings))) {
    log.error("adopt: the docker runtime does not answer; boxes come back when it does");
    return { adopted, known: rows.length, scanned: false };
  }
  // The host's networks and firewall rules for boxes, checked at every start: a host whose rules
  // were flushed gets them back before any box is used. Creating a box checks them again.
  await rt.prepare().catch((err) => log.error({ err }, "the box networks or their firewall rules are not in place"));
  // Removed records stay in the store; a container for one of them is a leftover to clean up.
  const everRecorded = new Set((await db().selectFrom("box").select(["id"]).execute()).map((r) => r.id));
  adopted += await scanRuntime(DEFAULT_RUNTIME, rt, known, everRecorded);
  // Stored runtimes (a remote engine, a swarm) were opened before this: their leftovers are
  // cleaned up and their unknown boxes taken back the same way. One that does not answer is
  // skipped; its recorded boxes are already `unreachable`, and the reaper brings them back.
  for (const [name, other] of storedRuntimes()) {
    if (!(await answers(name, pings))) {
      log.error(`adopt: the ${name} runtime does not answer; its boxes come back when it does`);
      continue;
    }
    adopted += await scanRuntime(name, other, known, everRecorded).catch((err) => {
      log.error({ err }, `adopt: the ${name} runtime's boxes could not be listed`);
      return 0;
    });
  }
  return { adopted, known: rows.length, scanned: true };
}

/** Takes back one runtime's boxes that the store does not know, and removes those it forgot. */
async function scanRuntime(name: string, rt: Runtime, known: Set<string>, everRecorded: Set<string>): Promise<number> {
  let adopted = 0;
  const me = serverId();
  let claims: ReturnType<typeof readClaims> | undefined;
  for (const found of await rt.list()) {
    if (!found.boxId || known.has(found.boxId)) continue;
    // Another server's box (another key) is not ours to take or to clean up.
    if (found.labels["holm.server"] !== me) continue;
    if (everRecorded.has(found.boxId)) {
      await rt.remove(found.ref).catch((e) => log.error({ err: e }, "adopt: cleanup"));
      continue;
    }
    try {
      const row = rowFromLabels(found.boxId, found.ref, found.labels);
      row.state = found.state === "running" ? "ready" : found.state === "paused" ? "paused" : "stopped";
      // A pool box's labels name no owner; its claim, if any, was kept on the host (pool-claims.server.ts).
      const claim = row.pooled ? (claims ??= readClaims()).get(row.id) : undefined;
      if (claim) Object.assign(row, claim, { pooled: 0 });
      await db().insertInto("box").values(row).execute();
      // Two runtimes may name one engine: the box is taken back once.
      known.add(row.id);
      await startAdoptedTrace(row, claim !== undefined);
      if (found.address) rememberAddress(row.id, found.address);
      adopted++;
      log.info(`adopted ${row.id} (${row.state}) from the ${name} runtime`);
    } catch (err) {
      log.error({ err }, `adopt: container ${found.ref.slice(0, 12)} has unreadable labels`);
    }
  }
  return adopted;
}

function rowFromLabels(id: string, ref: string, labels: Record<string, string>): BoxRow {
  const spec = JSON.parse(labels["holm.spec"] ?? "") as NormalSpec;
  const placement = JSON.parse(labels["holm.placement"] ?? "") as NormalPlacement;
  const created = Number(labels["holm.created_at_ms"]);
  const expires = Number(labels["holm.expires_at_ms"]);
  if (!spec.desktop || !Number.isFinite(created) || !Number.isFinite(expires)) throw new Error("missing labels");
  return {
    id,
    owner: labels["holm.owner"] ?? null,
    runtime: placement.runtime ?? DEFAULT_RUNTIME,
    runtime_ref: ref,
    spec_digest: labels["holm.spec_digest"] ?? specDigest(spec),
    spec_json: JSON.stringify(spec),
    placement_json: JSON.stringify(placement),
    image: null,
    state: "ready",
    reason: null,
    screens: spec.desktop.screens,
    width: spec.desktop.width,
    height: spec.desktop.height,
    persistent: placement.persistent ? 1 : 0,
    created_at_ms: created,
    expires_at_ms: expires,
    idle_timeout_secs: placement.idle_timeout_secs ?? null,
    last_used_ms: Date.now(),
    removed_at_ms: null,
    desktop: 1,
    name: labels["holm.name"] ?? null,
    labels_json: labels["holm.labels"] ?? null,
    created_by: labels["holm.created_by"] ?? null,
    created_by_name: labels["holm.created_by_name"] ?? null,
    start_json: null,
    pooled: labels["holm.pool"] === "1" ? 1 : 0,
    record_takeovers: 0,
    // No server's yet: a pool box joins this server's pool when startPool takes it over.
    server_id: null,
  };
}
