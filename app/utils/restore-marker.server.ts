import fs from "node:fs";
import path from "node:path";

// `holm restore` swaps a state directory's files by renames: the old ones into a
// `.holm-restore-old-…` directory, then the new ones in (cli/local/restore.ts). A kill -9 in the
// milliseconds between those renames leaves a directory with part of each, or with no store or no
// key at all, on which a server used to start as a fresh one: an empty store, a new key that opens
// none of the sealed secrets. The aside directory carries a marker while the renames run; a server
// refuses to start while one is there, and says where the old files are.

/** Where a restore puts the old state's files while it swaps. */
export const RESTORE_ASIDE_PREFIX = ".holm-restore-old-";
/** In an aside directory while its restore's renames run; gone once every new file is in place. */
export const RESTORE_UNFINISHED = "restore-unfinished";

/** Throws, saying what to do, when a restore into `dir` was cut off in the middle of its swap. */
export function assertRestoreFinished(dir: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(RESTORE_ASIDE_PREFIX) || !fs.existsSync(path.join(dir, name, RESTORE_UNFINISHED))) continue;
    const aside = path.join(dir, name);
    throw new Error(
      `a holm restore into ${dir} was cut off while it swapped the files: the old state's files are in ${aside}. ` +
        `Move them back into ${dir} and remove ${aside} (or run holm restore again, then remove ${aside}); no server starts on a half-swapped state directory`,
    );
  }
}
