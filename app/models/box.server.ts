import { checkDirectViewerRuntime } from "./direct-viewer.server";
import { randomBytes } from "node:crypto";
import { DEFAULT_RUNTIME, runtime } from "~/runtime/index.server";
import type { Runtime, Shell } from "~/runtime/runtime";
import { engineAway } from "~/runtime/engine-errors.server";
import { ApiError } from "~/utils/api-error.server";
import { db } from "~/utils/db.server";
import { SERVER_ID } from "~/utils/cluster.server";
import { type Actor, ownerOf } from "./actor";
import { actorIdentity } from "./actor-name.server";
import { launch } from "./box-launch.server";
import { queuedStart } from "./box-start.server";
import { stoppedError } from "./box-sync.server";
import { admit } from "./capacity.server";
import { pausedWaitMs, stillPaused } from "./paused-wait.server";
import { type BoxMetadata, metadataColumns } from "./box-metadata.server";
import {
  type BoxJson,
  type BoxRow,
  type BoxState,
  boxChanges,
  boxAddress,
  loadRow,
  rememberAddress,
  removeRow,
  requireSettled,
  runtimeOf,
  serial,
  toBoxJson,
  trace,
  visibleRow,
} from "./box-record.server";
import { recordEvent } from "./event.server";
import { enqueue } from "./job.server";
import { claimFromPool } from "./pool.server";
import { checkProfileRuntime, takeProfile } from "./profile.server";
import { requireLaunchable } from "./runtime-store.server";
import { insertBoxWithinLimits } from "./quota.server";
import {
  type NormalSpec,
  type Placement,
  type Spec,
  boxMemory,
  imageRequest,
  normalizePlacement,
  normalizeSpec,
  specDigest,
} from "./spec.server";
import { log } from "~/utils/log.server";

// A box's public verbs, for /v1 and the console alike: read, list, create, pause, resume, stop
// (box-lifecycle.server.ts), remove, and the checks a call makes before it drives a box
// (requireRunningBox). The record is box-record.server.ts, the launch box-launch.server.ts, the
// reaper box-sync.server.ts.

export { type BoxJson, type BoxState, boxChanges } from "./box-record.server";
export { pauseBox, resumeBox, stopBox } from "./box-lifecycle.server";

export async function getBox(actor: Actor, id: string): Promise<BoxJson> {
  return toBoxJson(await visibleRow(actor, id));
}

/**
 * A box the actor sees that takes calls now: "A box that is `starting` or `failed` refuses other
 * calls with `409`" (the seed), as `denied` (retryable while starting).
 */
export async function getSettledBox(actor: Actor, id: string): Promise<BoxJson> {
  const row = await visibleRow(actor, id);
  requireSettled(row);
  return toBoxJson(row);
}

/**
 * The same refusal for calls that also serve removed boxes (trace, fork), once the caller has
 * checked the actor sees the box. `failedOk`: a failed box's call goes on (its trace tells why).
 */
export async function refuseUnsettled(id: string, opts: { failedOk?: boolean } = {}): Promise<void> {
  const row = await loadRow(id);
  if (!row || row.removed_at_ms !== null || (opts.failedOk && row.state === "failed")) return;
  requireSettled(row);
}

export async function listBoxes(actor: Actor): Promise<BoxJson[]> {
  let q = db()
    .selectFrom("box")
    .selectAll()
    .where("removed_at_ms", "is", null)
    .where("state", "!=", "gone")
    .where("pooled", "=", 0)
    .orderBy("created_at_ms", "desc");
  const owner = ownerOf(actor);
  if (owner !== undefined) q = q.where("owner", "=", owner);
  return (await q.execute()).map(listed);
}

/** A box in a list: without its start's log lines (GET /v1/boxes/{id} has them), so 80 stay light. */
function listed(row: BoxRow): BoxJson {
  const box = toBoxJson(row);
  if (box.start?.log.length) box.start = { ...box.start, log: [] };
  return box;
}

export interface CreateBoxInput {
  spec?: Spec;
  placement?: Placement;
  /** holm's name and labels (box-metadata.server.ts); not part of the spec. */
  metadata?: BoxMetadata;
}

/**
 * Records the box as `starting`, then launches it. Inline, it returns the box once ready;
 * queued (`queued: true`), it returns the `starting` box at once and the launch goes on in the
 * background. The route picks the status (202 for queued).
 */
export async function createBox(
  actor: Actor,
  input: CreateBoxInput,
  opts: { queue: boolean },
): Promise<{ box: BoxJson; queued: boolean }> {
  const spec = normalizeSpec(input.spec);
  const placement = normalizePlacement(input.placement, DEFAULT_RUNTIME);
  // 404 for no such runtime; 400 `unsupported` for an added one this server cannot launch on.
  await requireLaunchable(placement.runtime);
  if (placement.profile) checkProfileRuntime(placement.runtime);
  checkDirectViewerRuntime(spec, placement.runtime);
  const rt = runtime(placement.runtime)!;
  // Refused up front: a box no swarm node can take now, more CPUs or memory than an engine has.
  await rt.admitLaunch?.({ memory: boxMemory(placement), memoryAsked: !!placement.memory, cpus: placement.cpus, persistent: placement.persistent });
  const owner = ownerOf(actor) ?? null;
  const by = await actorIdentity(actor);
  // A warm box of this spec, if the pool has one (ADR 0014): ready now, no launch.
  const claimed = await claimFromPool(actor, { spec, placement, metadata: input.metadata, owner, by });
  if (claimed) return { box: claimed, queued: false };
  // Only workspaces have a build limit, so only they need to know whether this one builds.
  const image = owner ? await imageStatusOf(rt, spec) : undefined;
  const now = Date.now();
  const row: BoxRow = {
    id: `box_${randomBytes(16).toString("hex")}`,
    owner,
    runtime: placement.runtime,
    runtime_ref: null,
    spec_digest: specDigest(spec),
    spec_json: JSON.stringify(spec),
    placement_json: JSON.stringify(placement),
    image: null,
    state: "starting",
    reason: null,
    screens: spec.desktop.screens,
    width: spec.desktop.width,
    height: spec.desktop.height,
    persistent: placement.persistent ? 1 : 0,
    // The clock starts when the server creates the box, not when it is ready.
    created_at_ms: now,
    expires_at_ms: now + placement.expires_after_secs * 1000,
    idle_timeout_secs: placement.idle_timeout_secs ?? null,
    last_used_ms: now,
    removed_at_ms: null,
    desktop: 1,
    ...metadataColumns(input.metadata),
    created_by: by.id,
    created_by_name: by.name,
    // Shown from the first push: the box waits for a start slot until its launch takes one.
    start_json: JSON.stringify(queuedStart(now)),
    pooled: 0,
    record_takeovers: 0,
    server_id: SERVER_ID,
  };
  // Refused with 503 `unavailable` when the machine cannot hold another box (ADR 0016).
  await admit(() => insertBoxWithinLimits(row, image));
  if (placement.profile) {
    // Taken once the box is recorded, so a box asking at the same time sees this one as the holder.
    try {
      await takeProfile(owner, placement.profile, row.id, placement.runtime);
    } catch (err) {
      await db().deleteFrom("box").where("id", "=", row.id).execute();
      throw err;
    }
  }
  // The first entry carries what a fork needs to launch the same box again.
  await trace(row.id, "box_created", { spec, placement }, actor);
  boxChanges.emit("change", toBoxJson(row));
  await recordEvent("box.created", { owner: row.owner, box_id: row.id, runtime: row.runtime, by: actor });

  const launching = () => serial(row.id, () => launch(row));
  if (opts.queue) {
    enqueue("launch", row.id, launching);
    return { box: toBoxJson(row), queued: true };
  }
  const failure = await launching();
  const after = (await loadRow(row.id)) ?? row;
  if (after.state === "failed") {
    const retryable = engineAway(failure);
    throw new ApiError(retryable ? "unavailable" : "failed", `box ${row.id} did not start: ${after.reason}`, { retryable });
  }
  return { box: toBoxJson(after), queued: false };
}

/**
 * A new box with the spec and placement of one the actor sees (the console's "Launch again" for
 * a box that failed to start); queued, so it answers at once with the box `starting`.
 */
export async function relaunchBox(actor: Actor, id: string): Promise<BoxJson> {
  const row = await visibleRow(actor, id);
  const spec = JSON.parse(row.spec_json) as Spec;
  const placement = JSON.parse(row.placement_json) as Placement;
  return (await createBox(actor, { spec, placement }, { queue: true })).box;
}

async function imageStatusOf(rt: Runtime, spec: NormalSpec) {
  try {
    return await rt.imageStatus(imageRequest(spec));
  } catch (err) {
    log.error({ err }, "image status");
    throw new ApiError("unavailable", `the ${rt.name} runtime cannot tell whether the box image exists: ${(err as Error).message}`);
  }
}

export async function removeBox(actor: Actor, id: string): Promise<BoxJson> {
  return removeRow(await visibleRow(actor, id), "removed", actor);
}

const lastTouch = new Map<string, number>();

/** How often a box's last use is written at most: idle timeouts are a minute or more. */
const TOUCH_EVERY_MS = 5000;

/** Marks a box used now, for its idle timeout (/v1 calls, CDP messages, terminal and viewer input): cheap per message. */
export async function touchBox(id: string): Promise<void> {
  const now = Date.now();
  if (now - (lastTouch.get(id) ?? 0) < TOUCH_EVERY_MS) return;
  lastTouch.set(id, now);
  await db().updateTable("box").set({ last_used_ms: now }).where("id", "=", id).execute();
}

export interface RunningBox {
  id: string;
  owner: string | null;
  screens: number;
  width: number;
  height: number;
  address: string;
}

/** Resolves when the box leaves `paused` (or after `limitMs`). */
function untilUnpaused(id: string, limitMs: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      boxChanges.off("change", onChange);
      signal?.removeEventListener("abort", done);
      clearTimeout(timer);
      resolve();
    };
    const onChange = (box: BoxJson) => {
      if (box.id === id && box.state !== "paused") done();
    };
    const timer = setTimeout(done, limitMs);
    boxChanges.on("change", onChange);
    signal?.addEventListener("abort", done);
  });
}

/**
 * A box that can be driven now. A paused box's call waits until it resumes (it does not fail);
 * `starting`/`failed` answer 409; a stopped box must be resumed first. Counts as use for the
 * idle timeout.
 */
export async function requireRunningBox(actor: Actor, id: string, signal?: AbortSignal): Promise<RunningBox> {
  let row = await visibleRow(actor, id);
  requireSettled(row);
  if (row.state === "paused") {
    const limitMs = pausedWaitMs();
    await untilUnpaused(id, limitMs, signal);
    row = await visibleRow(actor, id);
    if (row.state === "paused") throw new ApiError("timeout", stillPaused(id, limitMs), { retryable: true });
  }
  if (row.state === "stopped") {
    throw new ApiError("screen_unavailable", `box ${id} is stopped${row.reason ? ` (${row.reason})` : ""}; resume it first`, { retryable: false });
  }
  if (row.state === "unreachable") {
    throw new ApiError("unavailable", `box ${id} is unreachable: ${row.reason ?? "the runtime does not answer"}`);
  }
  if (row.state !== "ready") throw new ApiError("screen_unavailable", `box ${id} is ${row.state}`);
  let address = await boxAddress(id);
  if (!address && row.runtime_ref) {
    address = (await runtimeOf(row).inspect(row.runtime_ref)).address;
    if (address) rememberAddress(id, address);
  }
  // No address: its container may have just exited, before the news of it (box-sync.server.ts).
  if (!address) throw (await stoppedError(id)) ?? new ApiError("transport", `box ${id} has no address the server can reach`);
  void touchBox(id).catch((err) => log.error({ err }, "touch failed"));
  return { id, owner: row.owner, screens: row.screens, width: row.width, height: row.height, address };
}

/** Resolves with the box's state once it is no longer `starting` (queued launches, forks). */
export function waitUntilSettled(id: string, timeoutMs = 20 * 60_000): Promise<BoxState> {
  return new Promise((resolve) => {
    const done = (state: BoxState) => {
      boxChanges.off("change", onChange);
      clearTimeout(timer);
      resolve(state);
    };
    const onChange = (box: BoxJson) => {
      if (box.id === id && box.state !== "starting") done(box.state);
    };
    const timer = setTimeout(() => done("starting"), timeoutMs);
    boxChanges.on("change", onChange);
    void loadRow(id).then((row) => {
      if (row && row.state !== "starting") done(row.state as BoxState);
    });
  });
}

/** A shell with a TTY in a running box the actor sees (the console's terminal). */
export async function openShell(actor: Actor, id: string, cols: number, rows: number): Promise<Shell> {
  const row = await visibleRow(actor, id);
  if (row.state !== "ready") throw new ApiError("screen_unavailable", `box ${id} is ${row.state}; the terminal needs a running box`);
  if (!row.runtime_ref) throw new ApiError("transport", `box ${id} has no container the server can reach`);
  return runtimeOf(row).shell(row.runtime_ref, { cols, rows });
}
