import type { Runtime } from "~/runtime/runtime";
import { db } from "~/utils/db.server";
import { env } from "~/utils/env.server";
import { allUp, boxSecretFiles, probeHealth } from "./agent.server";
import { type BoxRow, loadRow, rememberAddress, runtimeOf, serverId, setState, trace } from "./box-record.server";
import { recordEvent } from "./event.server";
import { type NormalPlacement, type NormalSpec, boxMemory, imageRequest } from "./spec.server";

// Launching a recorded box: a start slot (a few desktops boot at once), the image, the
// container, the secrets and the wait until X, VNC and CDP answer on every screen. A launch that
// fails leaves the box `failed` with the reason; a box removed meanwhile is cleaned up.

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
  // So a server that restarts on the memory store still knows who made the box and its name.
  if (row.created_by) labels["holm.created_by"] = row.created_by;
  if (row.created_by_name) labels["holm.created_by_name"] = row.created_by_name;
  if (row.name) labels["holm.name"] = row.name;
  if (row.labels_json) labels["holm.labels"] = row.labels_json;
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

export async function launch(row: BoxRow): Promise<void> {
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
export async function waitReady(rt: Runtime, row: BoxRow): Promise<string> {
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
      rememberAddress(row.id, address);
      return address;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`the desktop did not answer within ${READY_TIMEOUT_MS / 1000} s`);
}
