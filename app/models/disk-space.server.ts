import fs from "node:fs/promises";
import { env } from "~/utils/env.server";
import { showBytes } from "~/utils/size";

// The host's disk as the disk watch last saw it (disk-watch.server.ts, ADR 0034). Kept apart from
// the watch, which stops boxes, so admission (capacity.server.ts) reads it without importing that.

export interface DiskLook {
  /** What the directory is, in words: "the engine's root". */
  what: string;
  path: string;
  /** Bytes an unprivileged writer may still take there. */
  free: number;
  /** The filesystem's device, to tell whether two directories share one. */
  dev: number;
}

/** The first watched filesystem found below HOLM_DISK_RESERVE at the last look; undefined while there is room. */
let short: DiskLook | undefined;

export function diskShort(): DiskLook | undefined {
  return short;
}

export function setDiskShort(look: DiskLook | undefined): void {
  short = look;
}

/** Free space on each directory that exists; one that cannot be read (not made yet, not on this host) is left out. */
export async function lookAt(dirs: { what: string; path: string | undefined }[]): Promise<DiskLook[]> {
  const looks = await Promise.all(
    dirs.map(async ({ what, path }) => {
      if (!path) return undefined;
      try {
        const [s, st] = await Promise.all([fs.statfs(path), fs.stat(path)]);
        return { what, path, free: s.bavail * s.bsize, dev: st.dev };
      } catch {
        return undefined;
      }
    }),
  );
  return looks.filter((l): l is DiskLook => !!l);
}

/** Why a new box cannot be admitted for want of disk, in words; undefined when there is room. */
export function diskRefusal(): string | undefined {
  if (!short) return undefined;
  return (
    `this machine's disk is nearly full (${showBytes(short.free)} free on ${short.what}, ${short.path}; ` +
    `HOLM_DISK_RESERVE=${showBytes(env().HOLM_DISK_RESERVE)} is kept for the running boxes, the engine and the server's store); try again once space is freed`
  );
}
