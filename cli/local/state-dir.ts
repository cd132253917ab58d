import fs from "node:fs";
import path from "node:path";
import { type Env, env } from "~/utils/env.server";

// What `holm backup`, `restore` and `doctor` share: they run on the server's machine and read
// its settings as the server does (the environment over HOLM_CONFIG_FILE, default
// /etc/holm/holm.env), through the same validated schema, not over HTTP (docs/decisions/0023).

/** The files of a `local` store's state directory that a backup carries. */
export const STORE_FILE = "holm.db";
export const KEY_FILE = "secret.key";
export const POOL_CLAIMS_FILE = "pool-claims.jsonl";
/** A server's own identity, apart from its key: a copy restored `--as-new-server` has one (secret.server.ts). */
export const SERVER_ID_FILE = "server-id";
export const FRAMES_DIR = "frames";
/** SQLite's companions of the store file: stale ones next to a restored store would corrupt it. */
export const STORE_COMPANIONS = ["-wal", "-shm", "-journal"].map((s) => STORE_FILE + s);

/** The server's settings, with `--state-dir` over HOLM_STATE_DIR. */
export function settings(stateDir?: string): Env {
  if (stateDir) process.env.HOLM_STATE_DIR = path.resolve(stateDir);
  return env();
}

/**
 * Processes that hold a file of `dir` open, from /proc/<pid>/fd (Linux; every process when run
 * as root, one's own user's otherwise): a server on the store, whatever address it listens on.
 */
export function processesUsing(dir: string, names: string[]): number[] {
  // /proc/<pid>/fd links name the real path: a directory named through a symlink (or a store file
  // that is one) is compared by where it leads, or a server on it would go unseen.
  const wanted = new Set(names.map((n) => realPath(path.join(realPath(dir), n))));
  const found: number[] = [];
  let pids: string[];
  try {
    pids = fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid);
  } catch {
    return found;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone, or another user's
    }
    for (const fd of fds) {
      try {
        if (wanted.has(fs.readlinkSync(`/proc/${pid}/fd/${fd}`))) {
          found.push(Number(pid));
          break;
        }
      } catch {
        /* closed meanwhile */
      }
    }
  }
  return found;
}

/** Where a path leads once every symlink is followed; as given (resolved) when it does not exist. */
function realPath(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/**
 * Files this (root) process made in a directory someone else owns (the service user `holm`)
 * are given to that owner, or the server could not open its own store afterwards: SQLite makes
 * `-wal` and `-shm` even for a read-only connection.
 */
export function giveToOwnerOf(dir: string, files: string[]): void {
  if (process.getuid?.() !== 0) return;
  const { uid, gid } = fs.statSync(dir);
  if (uid === 0) return;
  for (const f of files) {
    try {
      const st = fs.lstatSync(f);
      if (st.uid !== uid) fs.lchownSync(f, uid, gid);
    } catch {
      /* not there */
    }
  }
}

export const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
