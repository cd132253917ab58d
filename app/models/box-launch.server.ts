import type { AgentHealth } from "~/protocol/agent";
import { START_LOG_LINES, type StartPhase } from "~/protocol/box-console";
import { EngineTimeout } from "~/runtime/engine-bound.server";
import { DEFAULT_RUNTIME } from "~/runtime/index.server";
import type { BoxExit, Runtime } from "~/runtime/runtime";
import { withClusterSlot } from "~/utils/cluster.server";
import { db } from "~/utils/db.server";
import { env } from "~/utils/env.server";
import { log } from "~/utils/log.server";
import { countLaunch } from "~/utils/metrics.server";
import { PROFILE_TARGET, profileVolume } from "./profile.server";
import { allUp, boxSecretFiles, probeHealth } from "./agent.server";
import { LATE_CREATE_MS, leftovers } from "./box-leftovers.server";
import { type BoxRow, loadRow, rememberAddress, runtimeOf, serverId, setState, trace } from "./box-record.server";
import { StartTracker } from "./box-start.server";
import { recordEvent } from "./event.server";
import { endedBecause, exitPhase } from "./box-exit.server";
import { noteLaunchImage } from "./image.server";
import { type NormalPlacement, type NormalSpec, boxMemory, imageRequest } from "./spec.server";

// Launching a recorded box: a start slot (a few desktops boot at once), the image, the
// container, the secrets and the wait until X, VNC and CDP answer on every screen, each phase
// recorded as it happens (box-start.server.ts). A launch that fails leaves the box `failed` with
// the reason in words and the end of its log; a box removed meanwhile is cleaned up.

const READY_TIMEOUT_MS = 90_000;

const IMAGE_TIMEOUT_MS = 20 * 60_000;

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
  // A pool box: whoever claims it later is written into the box (pool.server.ts), not here.
  if (row.pooled) labels["holm.pool"] = "1";
  // So a server that restarts on the memory store still knows who made the box and its name.
  if (row.created_by) labels["holm.created_by"] = row.created_by;
  if (row.created_by_name) labels["holm.created_by_name"] = row.created_by_name;
  if (row.name) labels["holm.name"] = row.name;
  if (row.labels_json) labels["holm.labels"] = row.labels_json;
  return labels;
}

// Desktops starting at once compete for the CPU of their engine's host; past a few, each takes
// longer than the ready timeout allows. The rest wait their turn in `starting`. Slots are per
// runtime: one engine's starts (or one that stopped answering) never hold another's.
interface Slots {
  starting: number;
  queue: (() => void)[];
  // Pool refills wait behind every caller's launch, so a warm pool never delays a cold create.
  refills: (() => void)[];
}
const slotsByRuntime = new Map<string, Slots>();

function slotsOf(runtime: string): Slots {
  let s = slotsByRuntime.get(runtime);
  if (!s) slotsByRuntime.set(runtime, (s = { starting: 0, queue: [], refills: [] }));
  return s;
}

async function startSlot(runtime: string, refill: boolean): Promise<() => void> {
  const s = slotsOf(runtime);
  if (s.starting >= env().HOLM_LAUNCH_CONCURRENCY) await new Promise<void>((r) => (refill ? s.refills : s.queue).push(r));
  s.starting++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    s.starting--;
    (s.queue.shift() ?? s.refills.shift())?.();
  };
}

/** Launches on `runtime` waiting for a start slot, and those holding one (the pool refills only when idle). */
export function launchLoad(runtime = DEFAULT_RUNTIME): { starting: number; waiting: number } {
  const s = slotsOf(runtime);
  return { starting: s.starting, waiting: s.queue.length + s.refills.length };
}

/** Launches the recorded box; what it failed with, when it failed (the box is then `failed`). */
export async function launch(row: BoxRow): Promise<unknown> {
  const start = new StartTracker(row);
  countLaunch();
  log.info({ box: row.id, runtime: row.runtime, pooled: row.pooled ? true : undefined }, "box launch queued");
  const release = await startSlot(row.runtime, !!row.pooled);
  try {
    // Several servers on one engine (docs/decisions/0021) share its start slots too.
    return await withClusterSlot(`start:${row.runtime}`, env().HOLM_LAUNCH_CONCURRENCY, () => launchNow(row, start));
  } finally {
    release();
    // A launch that ended without ready or failed (the box was removed) shows what it saved.
    start.drop();
  }
}

async function launchNow(row: BoxRow, start: StartTracker): Promise<unknown> {
  const rt = runtimeOf(row);
  const spec = JSON.parse(row.spec_json) as NormalSpec;
  const placement = JSON.parse(row.placement_json) as NormalPlacement;
  const stillWanted = async () => (await loadRow(row.id))?.removed_at_ms === null;
  try {
    // Removed while it waited for its start slot: nothing to start.
    if (!(await stillWanted())) return;
    await start.enter("image");
    const { image, built } = await withTimeout(
      rt.ensureImage(imageRequest(spec), (line) => {
        log.info({ box: row.id, line }, "image build");
        start.buildLine(line);
      }),
      IMAGE_TIMEOUT_MS,
      "building the box image took too long",
    );
    if (built) await recordEvent("image.built", { runtime: row.runtime, data: { image, digest: image.slice(image.lastIndexOf(":") + 1) } });
    // So GET /v1/images lists what launches built, and DELETE knows the image.
    await noteLaunchImage(row.runtime, image, imageRequest(spec), row.spec_digest);
    if (!(await stillWanted())) return;
    await start.enter("container");
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
        ...(spec.policy.auth !== "none" && { HOLM_VIEWER_AUTH: spec.policy.auth }),
        ...(spec.desktop.server === "wayland" && { HOLM_DESKTOP: "wayland" }),
      },
      memory: boxMemory(placement),
      pids: env().HOLM_BOX_PIDS,
      cpus: placement.cpus,
      network: spec.policy.network,
      persistent: placement.persistent,
      ...(spec.policy.auth !== "none" && { directViewer: { bind: spec.policy.bind } }),
      ...(placement.profile && {
        profile: {
          // The row's volume (profile.server.ts): another server sharing the store may have named it.
          volume: await profileVolume(row.owner, placement.profile),
          target: PROFILE_TARGET,
          labels: { "holm.profile": placement.profile, "holm.server": serverId(), ...(row.owner && { "holm.owner": row.owner }) },
        },
      }),
    });
    await db().updateTable("box").set({ runtime_ref: ref, image }).where("id", "=", row.id).execute();
    Object.assign(row, { runtime_ref: ref, image });
    await rt.start(ref);
    await start.enter("x");
    // The secrets go in while the desktop boots (off the path to ready): x11vnc waits for its
    // password file, the agent answers 401 until its secret is there, and ready needs both.
    await Promise.all([
      rt.putSecrets(ref, boxSecretFiles(row.id)),
      waitReady(rt, row, (h) => void start.enter(phaseOf(h, row.screens)).catch(() => undefined)),
    ]);
    await start.enter("agent");
    if (!(await stillWanted())) {
      await rt.remove(ref);
      return;
    }
    await setState(row, "ready", null, start.ready());
    // A pool box has no trace and no events until its claim (pool.server.ts writes them then).
    if (row.pooled) return;
    await trace(row.id, "ready");
    await recordEvent("box.ready", { owner: row.owner, box_id: row.id, runtime: row.runtime });
  } catch (err) {
    log.warn({ box: row.id, phase: start.phase, err }, "box did not start");
    let lines: string[] = [];
    // The container's own output says why it died; read it before the container goes.
    // Not asked of an engine that just did not answer: each would cost another wait, holding the
    // start slot and the box's chain. The failed box keeps its container's ref; its removal (or
    // the reaper's, when it expires) removes the container once the engine answers again.
    if (row.runtime_ref && !(err instanceof EngineTimeout)) {
      // More than the log keeps, so the entrypoint's last word is found behind a chatty part.
      lines = await rt.logs(row.runtime_ref, START_LOG_LINES * 5).catch(() => []);
      start.containerLines(lines.slice(-START_LOG_LINES));
      await rt.remove(row.runtime_ref).catch((e) => {
        log.error({ box: row.id, err: e }, "cleanup failed");
        leftovers.set(row.id, { boxId: row.id, runtime: row.runtime, ref: row.runtime_ref });
      });
    } else if (err instanceof EngineTimeout) {
      // A slow engine may still create or start the container after the call gave up (a desktop
      // held until the box's expiry, or one no row names): the reaper removes it once it answers.
      leftovers.set(row.id, { boxId: row.id, runtime: row.runtime, ref: row.runtime_ref, lookUntil: Date.now() + LATE_CREATE_MS });
    }
    if (!(await stillWanted())) return;
    // A part that ended names the phase (the agent's, though no health answer ever came).
    const partPhase = err instanceof StartFailure ? exitPhase(err.exit) : undefined;
    if (partPhase) await start.enter(partPhase).catch(() => undefined);
    const why = start.reason(causeOf(err, lines));
    await setState(row, "failed", why, start.failed());
    if (row.pooled) return err;
    await trace(row.id, "failed", { why });
    await recordEvent("box.failed", { owner: row.owner, box_id: row.id, runtime: row.runtime, data: { why } });
    // The caller answering a create decides `retryable` on it (engine away or refused).
    return err;
  }
}

/** The phase a health answer puts a start in: the first part not yet up on every screen. */
function phaseOf(h: AgentHealth | undefined, screens: number): StartPhase {
  const all = (part: "x" | "vnc" | "cdp" | "window") =>
    !!h && Array.isArray(h.screens) && h.screens.length >= screens && h.screens.every((s) => (part === "window" ? s.window !== false : s[part]));
  if (!all("x")) return "x";
  if (!all("vnc")) return "vnc";
  if (!all("cdp") || !all("window")) return "browser";
  return "agent";
}

/**
 * Why a launch failed, in words: the image builder's apt error rather than the command it ran;
 * for a desktop that stopped, how it ended as the engine says (box-exit.server.ts), then the
 * box's own last failure line, quoted as the box's, rather than a container id.
 */
function causeOf(err: unknown, containerLines: string[]): string {
  const message = (err as Error).message ?? String(err);
  const apt = /\((E: [^)]*)\)\s*$/.exec(message);
  if (apt) return apt[1]!;
  if (err instanceof StartFailure && err.kind === "exited") return endedBecause(err.exit, containerLines, message);
  return message.replace(/The command '[^']*' returned/, "a build step returned");
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

/** Why a desktop did not come up: its container vanished or exited, or it did not answer in time. */
export class StartFailure extends Error {
  constructor(
    readonly kind: "missing" | "exited" | "timeout",
    message: string,
    /** How the container ended (`exited`), as its engine says. */
    readonly exit?: BoxExit,
  ) {
    super(message);
    this.name = "StartFailure";
  }
}

/**
 * Polls until X, VNC and CDP answer on every screen (on Wayland, and sway has shown and focused
 * Chromium's window), or the container dies. `onHealth` sees
 * each answer of the agent (undefined while it does not answer).
 */
export async function waitReady(rt: Runtime, row: BoxRow, onHealth?: (h: AgentHealth | undefined) => void): Promise<string> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let address: string | undefined;
  let lastInspect = 0;
  while (Date.now() < deadline) {
    if (!address || Date.now() - lastInspect > 1000) {
      lastInspect = Date.now();
      const info = await rt.inspect(row.runtime_ref!);
      if (info.state === "missing") throw new StartFailure("missing", "its container disappeared");
      if (info.state === "stopped") throw new StartFailure("exited", "its desktop stopped", info.exit);
      if (info.state === "unreachable") throw new StartFailure("missing", info.reason ?? "the runtime cannot reach it");
      address = info.address;
    }
    const health = address ? await probeHealth(address, 500) : undefined;
    onHealth?.(health);
    if (address && allUp(health, row.screens)) {
      rememberAddress(row.id, address);
      return address;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new StartFailure("timeout", `the desktop did not answer within ${READY_TIMEOUT_MS / 1000} s`);
}
