import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import SQLite from "better-sqlite3";
import tar from "tar-stream";
import { FRAMES_DIR, KEY_FILE, POOL_CLAIMS_FILE, SERVER_ID_FILE, STORE_COMPANIONS, STORE_FILE, giveToOwnerOf, plural, settings } from "./state-dir";

// `holm backup FILE`: the `local` store (HOLM_STORAGE_BACKEND=local) in one .tar.gz, taken while
// the server runs. The SQLite file is copied with SQLite's online backup API (better-sqlite3's
// db.backup()) in one step, so the copy is one read transaction: a consistent snapshot, and the
// server's writers go on meanwhile (WAL). Frames are files named by their hash, written before
// the row that names them commits (trace-local.server.ts), so every frame row of the snapshot has
// its file: the archive takes exactly those, after the snapshot. One a prune removed in between
// is counted as missing (it was unreferenced for days: that is what prune removes).

export const MANIFEST = "holm-backup.json";
export const FORMAT = 1;

export interface Manifest {
  format: number;
  created_at: string;
  holm_version: string;
  store: "local";
  migrations: string[];
  rows: Record<string, number>;
  frames: number;
  frames_missing: number;
  /** Whether secret.key is in the archive (else the server key is HOLM_SECRET_KEY, or left out). */
  secret_key: boolean;
  /** The server key came from HOLM_SECRET_KEY: the restored server needs the same value. */
  secret_key_from_env: boolean;
}

export interface BackupOptions {
  stateDir?: string;
  /** false: leave secret.key out (`--no-key`). */
  key: boolean;
  version: string;
  say: (line: string) => void;
}

const COUNTED = ["box", "user", "workspace", "api_key", "trace_entry", "trace_frame", "secrets", "webhook", "runtime", "event"];

export async function backup(file: string, opts: BackupOptions): Promise<Manifest> {
  const e = settings(opts.stateDir);
  if (e.HOLM_STORAGE_BACKEND !== "local") {
    throw new Error(
      e.HOLM_STORAGE_BACKEND === "postgres"
        ? "the store is PostgreSQL: back it up with pg_dump (README: Operate, Backups)"
        : "HOLM_STORAGE_BACKEND is memory: nothing is kept to back up (set it to local)",
    );
  }
  const dir = e.HOLM_STATE_DIR;
  const storeFile = path.join(dir, STORE_FILE);
  if (!fs.existsSync(storeFile)) throw new Error(`no store at ${storeFile} (HOLM_STATE_DIR)`);
  const out = path.resolve(file);
  if (inside(out, dir)) {
    throw new Error(
      `${out} is inside the state directory ${dir}: name a place outside it (the archive would be renamed onto a file the server runs on, such as its store or its key, and be lost with the directory it backs up)`,
    );
  }
  const work = await fsp.mkdtemp(path.join(path.dirname(out), ".holm-backup-")).catch((err: NodeJS.ErrnoException) => {
    // The archive is written beside where it goes (then renamed): say which place fails, in words.
    if (err.code === "ENOENT") throw new Error(`no directory ${path.dirname(out)} to write the archive in: make it first (mkdir -p)`);
    if (err.code === "ENOTDIR") throw new Error(`${path.dirname(out)} is not a directory: name a file in a directory`);
    if (err.code === "EACCES" || err.code === "EPERM") throw new Error(`this user cannot write in ${path.dirname(out)}: run as root, or name another place`);
    throw err;
  });
  const partial = path.join(work, "archive.tar.gz");
  try {
    const snapshot = path.join(work, STORE_FILE);
    const before = new Set(STORE_COMPANIONS.filter((f) => fs.existsSync(path.join(dir, f))));
    const source = new SQLite(storeFile, { readonly: true, fileMustExist: true });
    try {
      source.pragma("busy_timeout = 5000");
      // A page count far above any store: the rest goes in the next step, one read transaction.
      await source.backup(snapshot, { progress: () => 1 << 30 });
    } finally {
      source.close();
      giveToOwnerOf(dir, STORE_COMPANIONS.filter((f) => !before.has(f)).map((f) => path.join(dir, f)));
    }

    const snap = new SQLite(snapshot);
    let manifest: Manifest;
    let hashes: string[];
    try {
      // One file, not a WAL beside it: the archive's store opens as it is.
      snap.pragma("journal_mode = DELETE");
      const check = snap.pragma("quick_check", { simple: true });
      if (check !== "ok") throw new Error(`the snapshot fails SQLite's quick_check: ${String(check)}`);
      const tables = new Set((snap.prepare("select name from sqlite_master where type = 'table'").all() as { name: string }[]).map((r) => r.name));
      const rows: Record<string, number> = {};
      for (const t of COUNTED) if (tables.has(t)) rows[t] = (snap.prepare(`select count(*) as n from "${t}"`).get() as { n: number }).n;
      const migrations = tables.has("kysely_migration")
        ? (snap.prepare("select name from kysely_migration order by name").all() as { name: string }[]).map((r) => r.name)
        : [];
      hashes = tables.has("trace_frame") ? (snap.prepare("select hash from trace_frame").pluck().all() as string[]) : [];
      const keyFile = path.join(dir, KEY_FILE);
      manifest = {
        format: FORMAT,
        created_at: new Date().toISOString(),
        holm_version: opts.version,
        store: "local",
        migrations,
        rows,
        frames: 0,
        frames_missing: 0,
        secret_key: opts.key && !e.HOLM_SECRET_KEY && fs.existsSync(keyFile),
        secret_key_from_env: e.HOLM_SECRET_KEY !== undefined,
      };
    } finally {
      snap.close();
    }

    const pack = tar.pack();
    // 0600 from the start: the archive holds the server key and every account's hashes.
    const written = pipeline(pack, createGzip(), fs.createWriteStream(partial, { mode: 0o600 }));
    // Awaited below; until then a failure of the file (disk full) must not end the process unheard.
    written.catch(() => undefined);
    const add = async (name: string, data: Buffer | string, mode = 0o600) => {
      const bytes = typeof data === "string" ? Buffer.from(data) : data;
      await pipeline(Readable.from([bytes]), pack.entry({ name, size: bytes.length, mode, mtime: new Date() }));
    };
    const addFile = async (name: string, from: string, mode = 0o600) => {
      const { size } = await fsp.stat(from);
      await pipeline(fs.createReadStream(from), pack.entry({ name, size, mode, mtime: new Date() }));
    };
    try {
      await addFile(STORE_FILE, snapshot);
      if (manifest.secret_key) await addFile(KEY_FILE, path.join(dir, KEY_FILE));
      if (fs.existsSync(path.join(dir, POOL_CLAIMS_FILE))) await addFile(POOL_CLAIMS_FILE, path.join(dir, POOL_CLAIMS_FILE));
      // A copy restored --as-new-server is its own server: restored again, it must stay so.
      if (fs.existsSync(path.join(dir, SERVER_ID_FILE))) await addFile(SERVER_ID_FILE, path.join(dir, SERVER_ID_FILE), 0o644);
      const framesDir = path.join(dir, FRAMES_DIR);
      for (const hash of hashes) {
        const rel = `${hash.slice(0, 2)}/${hash}.png`;
        let bytes: Buffer;
        try {
          // Read whole (tens to hundreds of KB) so the tar header's size is the bytes written.
          bytes = await fsp.readFile(path.join(framesDir, rel));
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
          manifest.frames_missing++;
          continue;
        }
        await add(`${FRAMES_DIR}/${rel}`, bytes, 0o644);
        manifest.frames++;
      }
      // Last, so it counts what the archive holds (`tar -xzOf FILE holm-backup.json` reads it).
      await add(MANIFEST, `${JSON.stringify(manifest, null, 2)}\n`);
      pack.finalize();
      await written;
    } catch (err) {
      // Ends the archive's streams; the finally removes the partial file.
      pack.destroy();
      throw err;
    }
    await fsp.rename(partial, out);

    const r = manifest.rows;
    opts.say(
      `backed up ${storeFile}: ${plural(r.box ?? 0, "box", "boxes")}, ${plural(r.user ?? 0, "user")}, ${plural(r.api_key ?? 0, "key")}, ` +
        `${plural(r.trace_entry ?? 0, "trace entry", "trace entries")}, ${plural(manifest.frames, "frame")}` +
        (manifest.frames_missing ? ` (${manifest.frames_missing} pruned meanwhile)` : "") +
        ` → ${out} (${(fs.statSync(out).size / 1024 / 1024).toFixed(1)} MiB)`,
    );
    if (manifest.secret_key) opts.say(`warning: ${out} holds the server key (secret.key): keep it as private as the server (mode 0600)`);
    else if (manifest.secret_key_from_env) opts.say("note: the server key is HOLM_SECRET_KEY, not in the archive: keep it with the backup, the restored server needs the same value");
    else opts.say("warning: no server key in the archive (--no-key): secrets and saved browser states open only with the same secret.key");
    return manifest;
  } finally {
    await fsp.rm(work, { recursive: true, force: true });
  }
}

/**
 * Whether `file` would be written in `dir` or below, symlinks followed (the state directory is
 * often named through one): the archive goes beside `file` and is renamed onto it.
 */
function inside(file: string, dir: string): boolean {
  const real = (p: string) => {
    try {
      return fs.realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  const rel = path.relative(real(dir), real(path.dirname(file)));
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}
