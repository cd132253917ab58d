import { dockerRootDir, writtenByBoxes } from "~/runtime/docker-disk.server";
import { DEFAULT_RUNTIME, localDocker } from "~/runtime/index.server";
import { withClusterLock } from "~/utils/cluster.server";
import { db } from "~/utils/db.server";
import { env } from "~/utils/env.server";
import { log } from "~/utils/log.server";
import { showBytes } from "~/utils/size";
import { type BoxRow, forgetAddress, loadRow, runBeforeStop, serial, setState, trace } from "./box-record.server";
import { type DiskLook, diskShort, lookAt, setDiskShort } from "./disk-space.server";
import { recordEvent } from "./event.server";
import { retire } from "./pool.server";

// The disk watch (ADR 0034). Nothing bounds what a box writes into its container's writable
// layer (overlay2 on ext4 takes no size limit), and that layer, every other box's, the engine's
// and the server's store share one disk. Every few seconds the free space on the engine's root
// and HOLM_STATE_DIR is read (two statfs calls: nothing per box while there is room). Below
// HOLM_DISK_RESERVE, new boxes are refused (capacity.server.ts) and, where the boxes write, the
// running box of this server that wrote the most is stopped, with why; a pool box is removed.

type Engine = NonNullable<ReturnType<typeof localDocker>>;

/**
 * The least a box must have written to be stopped for the disk. Stopping frees nothing (its files
 * stay for its owner), so the disk stays short after the stop: without this floor each later look
 * would stop the next box, down to ones that wrote a few MiB, for space something else took.
 */
const MIN_WRITTEN = 1024 ** 3;

/**
 * After a listing of the boxes' writes found none to stop, the next waits until the free space
 * fell this much more, or RELIST_MS passed (a box that wrote while it was starting is `ready`
 * by then): the engine walks every container's files for a listing, and a disk short of
 * something else may stay short for long while nothing more is written.
 */
const FELL_AGAIN = 256 * 1024 ** 2;
const RELIST_MS = 30_000;
/** The free space and time when a listing last found no box to stop; undefined once there is room again. */
let empty: { free: number; at: number } | undefined;

/** One look at the disk; words for the log when something changed. */
export async function watchDisk(): Promise<string | undefined> {
  const reserve = env().HOLM_DISK_RESERVE;
  if (!reserve) return undefined;
  const engine = localDocker();
  const root = engine ? await dockerRootDir(engine.docker) : undefined;
  const looks = await lookAt([
    { what: "the engine's root", path: root },
    { what: "the server's state directory", path: env().HOLM_STATE_DIR },
  ]);
  const was = diskShort();
  const short = looks.filter((l) => l.free < reserve);
  setDiskShort(short[0]);
  if (!short.length) {
    empty = undefined;
    return was ? `room again on ${was.what}; new boxes are admitted` : undefined;
  }
  const began = was ? undefined : `${showBytes(short[0]!.free)} free on ${short[0]!.what} (${short[0]!.path}), under HOLM_DISK_RESERVE; new boxes are refused`;
  // Stopping a box helps only on the filesystem the boxes write to.
  const rootLook = looks.find((l) => l.path === root);
  if (!engine || !rootLook || !short.some((l) => l.dev === rootLook.dev)) return began;
  const stopped = await stopTopWriter(engine, rootLook);
  return [began, stopped].filter(Boolean).join("; ") || undefined;
}

/** Stops (or, a pool box, removes) this server's running box with the largest writable layer, if it wrote MIN_WRITTEN. */
async function stopTopWriter(engine: Engine, look: DiskLook): Promise<string | undefined> {
  // Every box of the engine, of any server that shares it: only this store's boxes are this server's to stop.
  if (empty && look.free > empty.free - FELL_AGAIN && Date.now() - empty.at < RELIST_MS) return undefined;
  const written = (await writtenByBoxes(engine.docker)).filter((w) => w.bytes >= MIN_WRITTEN).sort((a, b) => b.bytes - a.bytes);
  const rows = written.length ? await readyRows(written.map((w) => w.ref)) : [];
  const top = written.find((w) => rows.some((r) => r.runtime_ref === w.ref));
  if (!top) {
    empty = { free: look.free, at: Date.now() };
    return undefined;
  }
  empty = undefined;
  const row = rows.find((r) => r.runtime_ref === top.ref)!;
  const reason =
    `it filled the disk: ${showBytes(top.bytes)} written into its own files, and ${look.what} had ${showBytes(look.free)} free, ` +
    `under HOLM_DISK_RESERVE; its files stay until its owner removes it`;
  if (row.pooled) {
    // No one's yet: removed, which gives its space back too (ADR 0014).
    await retire(row, reason);
    return `removed pool box ${row.id}: ${reason}`;
  }
  return (await stopForDisk(engine, row, reason)) ? `stopped box ${row.id}: ${reason}` : undefined;
}

/** This server's ready boxes on the built-in engine among these containers. */
function readyRows(refs: string[]): Promise<BoxRow[]> {
  return db()
    .selectFrom("box")
    .selectAll()
    .where("runtime", "=", DEFAULT_RUNTIME)
    .where("runtime_ref", "in", refs)
    .where("removed_at_ms", "is", null)
    .where("state", "=", "ready")
    .execute();
}

/** Stops the box as a stop through /v1 does (trace entry, `box.stopped` event), with `reason`; false when it was no longer running. */
async function stopForDisk(engine: Engine, row: BoxRow, reason: string): Promise<boolean> {
  return serial(row.id, () =>
    withClusterLock(`box:${row.id}`, async () => {
      const cur = await loadRow(row.id);
      if (!cur || cur.removed_at_ms !== null || cur.state !== "ready" || !cur.runtime_ref) return false;
      // A browser profile's last writes (small) before its browser goes, as any stop.
      await runBeforeStop(cur);
      await engine.stop(cur.runtime_ref);
      forgetAddress(cur.id);
      await setState(cur, "stopped", reason);
      log.warn({ box: cur.id, reason }, "box stopped for the disk");
      await trace(cur.id, "stopped", { reason });
      await recordEvent("box.stopped", { owner: cur.owner, box_id: cur.id, runtime: cur.runtime, data: { why: reason } });
      return true;
    }),
  );
}
