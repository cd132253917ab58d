import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import type { Selectable } from "kysely";
import type { BoxTable } from "../../db/schema";
import { DEFAULT_RUNTIME, runtime } from "~/runtime/index.server";
import type { Runtime, Shell } from "~/runtime/runtime";
import { PauseBusyError } from "~/runtime/runtime";
import { ApiError, notFound } from "~/utils/api-error.server";
import { type Actor, issuerOf, ownerOf } from "~/utils/auth.server";
import { db } from "~/utils/db.server";
import { env, publicUrl } from "~/utils/env.server";
import { derive } from "~/utils/secret.server";
import { allUp, boxSecretFiles, probeHealth } from "./agent.server";
import { recordEvent } from "./event.server";
import { enqueue } from "./job.server";
import { insertBoxWithinLimits } from "./quota.server";
import { recordEntry } from "./trace.server";
import {
  type NormalPlacement,
  type NormalSpec,
  type Placement,
  type Spec,
  boxMemory,
  imageRequest,
  normalizePlacement,
  normalizeSpec,
  specDigest,
} from "./spec.server";

// The reaper and restart adoption live in box-sync.server.ts (it uses the exported internals
// below: serial, trace, setState, runtimeOf, removeRow and the address functions).
export { adoptBoxes, reapBoxes } from "./box-sync.server";

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
  created_at_ms: number;
  expires_at_ms: number;
  owner?: string;
  spec: NormalSpec;
  placement: NormalPlacement;
}

const READY_TIMEOUT_MS = 90_000;
const IMAGE_TIMEOUT_MS = 20 * 60_000;

/** State changes, for the console's live list and for calls waiting on a paused box. */
export const boxChanges = new EventEmitter();
boxChanges.setMaxListeners(0);

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
    // No devtools_url until the CDP proxy (/v1/boxes/{id}/cdp) is built: a URL that answers 404
    // is worse than none.
    created_at_ms: Number(row.created_at_ms),
    expires_at_ms: Number(row.expires_at_ms),
    spec,
    placement: JSON.parse(row.placement_json),
  };
  if (row.reason) out.reason = row.reason;
  if (row.owner) out.owner = row.owner;
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

/** Who a lifecycle entry names: a person (session), an agent (key), or the server; and `by`. */
function changedBy(actor: Actor): { who: "agent" | "person" | "server"; by: string } {
  if (actor.kind === "server") return { who: "server", by: "server" };
  return { who: actor.via === "session" ? "person" : "agent", by: issuerOf(actor) };
}

/** A lifecycle entry in the box's trace; a store failure is logged, never fatal to the operation. */
export async function trace(boxId: string, event: string, data?: Record<string, unknown>, actor: "agent" | "person" | "server" = "server") {
  try {
    await recordEntry(boxId, { actor, event, ...(data ? { data } : {}) });
  } catch (err) {
    console.error(`[holm] trace ${event} of ${boxId} failed:`, err);
  }
}

async function loadRow(id: string): Promise<BoxRow | undefined> {
  return db().selectFrom("box").selectAll().where("id", "=", id).executeTakeFirst();
}

export async function setState(row: BoxRow, state: BoxState, reason: string | null, extra: Partial<BoxRow> = {}) {
  const patch = { state, reason, ...extra };
  await db().updateTable("box").set(patch).where("id", "=", row.id).execute();
  Object.assign(row, patch);
  boxChanges.emit("change", toBoxJson(row));
}

export function runtimeOf(row: Pick<BoxRow, "runtime">): Runtime {
  const rt = runtime(row.runtime);
  if (!rt) throw new ApiError("unavailable", `the runtime ${row.runtime} is not configured on this server`);
  return rt;
}

/** Finds a box the actor may see. Another workspace's box is `not_found`, so ids do not leak. */
async function visibleRow(actor: Actor, id: string): Promise<BoxRow> {
  const row = /^box_[0-9a-f]{8,64}$/.test(id) ? await loadRow(id) : undefined;
  const owner = ownerOf(actor);
  if (!row || (owner !== undefined && row.owner !== owner)) throw notFound(`no box ${id}`);
  if (row.removed_at_ms !== null || row.state === "gone") {
    throw new ApiError("gone", `box ${id} was removed${row.reason ? `: ${row.reason}` : ""}`);
  }
  return row;
}

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
    .orderBy("created_at_ms", "desc");
  const owner = ownerOf(actor);
  if (owner !== undefined) q = q.where("owner", "=", owner);
  return (await q.execute()).map(toBoxJson);
}

export interface CreateBoxInput {
  spec?: Spec;
  placement?: Placement;
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
  const rt = runtime(placement.runtime);
  if (!rt) throw notFound(`no runtime named ${placement.runtime}`);
  const owner = ownerOf(actor) ?? null;
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
  };
  await insertBoxWithinLimits(row, image);
  // The first entry carries what a fork needs to launch the same box again.
  await trace(row.id, "box_created", { spec, placement }, actor.kind === "workspace" && actor.via === "session" ? "person" : "agent");
  boxChanges.emit("change", toBoxJson(row));
  await recordEvent("box.created", { owner: row.owner, box_id: row.id, runtime: row.runtime });

  const launching = () => serial(row.id, () => launch(row));
  if (opts.queue) {
    enqueue("launch", row.id, launching);
    return { box: toBoxJson(row), queued: true };
  }
  await launching();
  const after = (await loadRow(row.id)) ?? row;
  if (after.state === "failed") {
    const retryable = /runtime|engine|docker|ECONNREFUSED|socket/i.test(after.reason ?? "");
    throw new ApiError(retryable ? "unavailable" : "failed", `box ${row.id} did not start: ${after.reason}`, {
      retryable,
    });
  }
  return { box: toBoxJson(after), queued: false };
}

async function imageStatusOf(rt: Runtime, spec: NormalSpec) {
  try {
    return await rt.imageStatus(imageRequest(spec));
  } catch (err) {
    console.error("[holm] image status:", err);
    throw new ApiError("unavailable", `the ${rt.name} runtime cannot tell whether the box image exists: ${(err as Error).message}`);
  }
}

/**
 * Which server launched a box: derived from the server key, so a restarted server with the same
 * key knows its boxes, and two servers on one engine never take each other's (whose agent
 * secrets they could not use anyway).
 */
export function serverId(): string {
  return derive("server-id").slice(0, 16);
}

function labelsFor(row: BoxRow): Record<string, string> {
  const extra = env().HOLM_BOX_LABELS;
  const labels: Record<string, string> = {
    "holm.server": serverId(),
    ...(extra ? Object.fromEntries(extra.split(",").map((kv) => kv.split("=") as [string, string])) : {}),
    "holm.spec_digest": row.spec_digest,
    "holm.spec": row.spec_json,
    "holm.placement": row.placement_json,
    "holm.created_at_ms": String(row.created_at_ms),
    "holm.expires_at_ms": String(row.expires_at_ms),
  };
  if (row.owner) labels["holm.owner"] = row.owner;
  return labels;
}

// Desktops starting at once compete for the CPU; past a few, each takes longer than the ready
// timeout allows. The rest wait their turn in `starting`.
let starting = 0;
const startQueue: (() => void)[] = [];
async function startSlot(): Promise<() => void> {
  if (starting >= env().HOLM_LAUNCH_CONCURRENCY) await new Promise<void>((r) => startQueue.push(r));
  starting++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    starting--;
    startQueue.shift()?.();
  };
}

async function launch(row: BoxRow): Promise<void> {
  const release = await startSlot();
  try {
    await launchNow(row);
  } finally {
    release();
  }
}

async function launchNow(row: BoxRow): Promise<void> {
  const rt = runtimeOf(row);
  const spec = JSON.parse(row.spec_json) as NormalSpec;
  const placement = JSON.parse(row.placement_json) as NormalPlacement;
  const stillWanted = async () => (await loadRow(row.id))?.removed_at_ms === null;
  try {
    const { image, built } = await withTimeout(
      rt.ensureImage(imageRequest(spec), (line) => console.log(`[holm] image for ${row.id}: ${line}`)),
      IMAGE_TIMEOUT_MS,
      "building the box image took too long",
    );
    if (built) await recordEvent("image.built", { runtime: row.runtime, data: { image } });
    if (!(await stillWanted())) return;
    const { ref } = await rt.create({
      boxId: row.id,
      image,
      labels: labelsFor(row),
      env: {
        HOLM_BOX_ID: row.id,
        HOLM_SCREENS: String(row.screens),
        HOLM_WIDTH: String(row.width),
        HOLM_HEIGHT: String(row.height),
        HOLM_FEATURES: spec.desktop.features.join(","),
      },
      memory: boxMemory(placement),
      pids: env().HOLM_BOX_PIDS,
      cpus: placement.cpus,
      network: spec.policy.network,
      persistent: placement.persistent,
    });
    await db().updateTable("box").set({ runtime_ref: ref, image }).where("id", "=", row.id).execute();
    Object.assign(row, { runtime_ref: ref, image });
    await rt.start(ref);
    // The secrets go in while the desktop boots (off the path to ready): x11vnc waits for its
    // password file, the agent answers 401 until its secret is there, and ready needs both.
    await Promise.all([rt.putSecrets(ref, boxSecretFiles(row.id)), waitReady(rt, row)]);
    if (!(await stillWanted())) {
      await rt.remove(ref);
      return;
    }
    await setState(row, "ready", null);
    await trace(row.id, "ready");
    await recordEvent("box.ready", { owner: row.owner, box_id: row.id, runtime: row.runtime });
  } catch (err) {
    const why = (err as Error).message;
    console.error(`[holm] box ${row.id} did not start:`, err);
    if (row.runtime_ref) await rt.remove(row.runtime_ref).catch((e) => console.error("[holm] cleanup failed:", e));
    if (!(await stillWanted())) return;
    await setState(row, "failed", why);
    await trace(row.id, "failed", { why });
    await recordEvent("box.failed", { owner: row.owner, box_id: row.id, runtime: row.runtime, data: { why } });
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(message)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Polls until X, VNC and CDP answer on every screen, or the container dies. */
async function waitReady(rt: Runtime, row: BoxRow): Promise<string> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let address: string | undefined;
  let lastInspect = 0;
  while (Date.now() < deadline) {
    if (!address || Date.now() - lastInspect > 1000) {
      lastInspect = Date.now();
      const info = await rt.inspect(row.runtime_ref!);
      if (info.state === "missing") throw new Error("the container disappeared while the box was starting");
      if (info.state === "stopped") throw new Error(`the box exited while starting (docker logs holm-${row.id})`);
      address = info.address;
    }
    if (address && allUp(await probeHealth(address, 500), row.screens)) {
      addresses.set(row.id, address);
      return address;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`the desktop did not answer within ${READY_TIMEOUT_MS / 1000} s`);
}

/** A box that can take a call now: `starting` and `failed` refuse with 409. */
function requireSettled(row: BoxRow) {
  if (row.state === "starting") throw new ApiError("denied", `box ${row.id} is starting`, { retryable: true });
  if (row.state === "failed") {
    throw new ApiError("denied", `box ${row.id} failed to start: ${row.reason ?? "unknown"}; delete it`, {
      retryable: false,
    });
  }
}

export async function pauseBox(actor: Actor, id: string): Promise<BoxJson> {
  const row = await visibleRow(actor, id);
  requireSettled(row);
  return serial(id, async () => {
    const cur = (await loadRow(id))!;
    if (cur.state === "paused") return toBoxJson(cur);
    if (cur.state !== "ready") throw new ApiError("denied", `box ${id} is ${cur.state}; only a ready box pauses`);
    try {
      await runtimeOf(cur).pause(cur.runtime_ref!);
    } catch (err) {
      if (!(err instanceof PauseBusyError)) throw err;
      console.error(`[holm] box ${id} would not freeze:`, err.message);
      throw new ApiError("unavailable", `box ${id} is busy starting processes and could not be paused; try again`);
    }
    await setState(cur, "paused", null);
    const { who, by } = changedBy(actor);
    await trace(id, "paused", { by }, who);
    await recordEvent("box.paused", { owner: cur.owner, box_id: id, runtime: cur.runtime });
    return toBoxJson(cur);
  });
}

export async function resumeBox(actor: Actor, id: string): Promise<BoxJson> {
  const row = await visibleRow(actor, id);
  requireSettled(row);
  return serial(id, async () => {
    const cur = (await loadRow(id))!;
    const rt = runtimeOf(cur);
    if (cur.state === "ready") return toBoxJson(cur);
    // A stopped box comes back with a new desktop, so its viewer URLs change.
    let desktop = cur.desktop;
    if (cur.state === "paused") {
      await rt.unpause(cur.runtime_ref!);
    } else if (cur.state === "stopped") {
      await rt.start(cur.runtime_ref!);
      addresses.delete(id);
      await waitReady(rt, cur);
      desktop++;
    } else {
      throw new ApiError("denied", `box ${id} is ${cur.state}; it cannot resume`, { retryable: cur.state === "unreachable" });
    }
    await setState(cur, "ready", null, { last_used_ms: Date.now(), desktop });
    const { who, by } = changedBy(actor);
    await trace(id, "resumed", { by }, who);
    await recordEvent("box.ready", { owner: cur.owner, box_id: id, runtime: cur.runtime });
    return toBoxJson(cur);
  });
}

export async function stopBox(actor: Actor, id: string): Promise<BoxJson> {
  const row = await visibleRow(actor, id);
  requireSettled(row);
  return serial(id, async () => {
    const cur = (await loadRow(id))!;
    if (cur.state === "stopped") return toBoxJson(cur);
    if (cur.state !== "ready" && cur.state !== "paused") {
      throw new ApiError("denied", `box ${id} is ${cur.state}; it cannot stop`);
    }
    const rt = runtimeOf(cur);
    // A paused container ignores the stop signal until it runs again.
    if (cur.state === "paused") await rt.unpause(cur.runtime_ref!);
    await rt.stop(cur.runtime_ref!);
    addresses.delete(id);
    await setState(cur, "stopped", null);
    const { who, by } = changedBy(actor);
    await trace(id, "stopped", { by }, who);
    await recordEvent("box.stopped", { owner: cur.owner, box_id: id, runtime: cur.runtime });
    return toBoxJson(cur);
  });
}

export async function removeBox(actor: Actor, id: string): Promise<BoxJson> {
  const row = await visibleRow(actor, id);
  return removeRow(row, "removed", actor);
}

/** Removes the container and keeps the record (its history outlives it); `actor` asked for it. */
export async function removeRow(row: BoxRow, reason: string, actor: Actor = { kind: "server" }): Promise<BoxJson> {
  // Marked first, outside the chain, so a launch in progress sees it and stops.
  const at = Date.now();
  await db().updateTable("box").set({ removed_at_ms: at }).where("id", "=", row.id).execute();
  return serial(row.id, async () => {
    const cur = (await loadRow(row.id))!;
    if (cur.runtime_ref) await runtimeOf(cur).remove(cur.runtime_ref);
    addresses.delete(row.id);
    await setState(cur, "gone", reason, { removed_at_ms: at });
    const { who, by } = changedBy(actor);
    await trace(cur.id, "gone", { reason, by }, who);
    await recordEvent("box.removed", { owner: cur.owner, box_id: cur.id, runtime: cur.runtime, data: { why: reason } });
    return toBoxJson(cur);
  });
}

const lastTouch = new Map<string, number>();

/** Marks a box used now, for its idle timeout (written at most once a second per box). */
export async function touchBox(id: string): Promise<void> {
  const now = Date.now();
  if (now - (lastTouch.get(id) ?? 0) < 1000) return;
  lastTouch.set(id, now);
  await db().updateTable("box").set({ last_used_ms: now }).where("id", "=", id).execute();
}

/** Where the server reaches a running box, if known. */
export async function boxAddress(id: string): Promise<string | undefined> {
  return addresses.get(id);
}

export interface RunningBox {
  id: string;
  owner: string | null;
  screens: number;
  width: number;
  height: number;
  address: string;
}

const PAUSED_WAIT_MS = 10 * 60_000;

/** Resolves when the box leaves `paused` (or after the limit). */
function untilUnpaused(id: string, signal?: AbortSignal): Promise<void> {
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
    const timer = setTimeout(done, PAUSED_WAIT_MS);
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
    await untilUnpaused(id, signal);
    row = await visibleRow(actor, id);
    if (row.state === "paused") throw new ApiError("timeout", `box ${id} stayed paused`, { retryable: true });
  }
  if (row.state === "stopped") {
    throw new ApiError("screen_unavailable", `box ${id} is stopped; resume it first`, { retryable: false });
  }
  if (row.state === "unreachable") {
    throw new ApiError("unavailable", `box ${id} is unreachable: ${row.reason ?? "the runtime does not answer"}`);
  }
  if (row.state !== "ready") throw new ApiError("screen_unavailable", `box ${id} is ${row.state}`);
  let address = addresses.get(id);
  if (!address && row.runtime_ref) {
    address = (await runtimeOf(row).inspect(row.runtime_ref)).address;
    if (address) addresses.set(id, address);
  }
  if (!address) throw new ApiError("transport", `box ${id} has no address the server can reach`);
  void touchBox(id).catch((err) => console.error("[holm] touch failed:", err));
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
