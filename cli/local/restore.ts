import fs from "node:fs";
import fsp from "node:fs/promises";
import { randomBytes } from "node:crypto";
import path from "node:path";
import SQLite from "better-sqlite3";
import { migrationProvider } from "../../db/migrations";
import type { Manifest } from "./backup";
import { unpack } from "./restore-archive";
import { KEY_FILE, SERVER_ID_FILE, STORE_COMPANIONS, STORE_FILE, giveToOwnerOf, plural, processesUsing, settings } from "./state-dir";
import { RESTORE_ASIDE_PREFIX, RESTORE_UNFINISHED } from "~/utils/restore-marker.server";

// `holm restore FILE`: a `holm backup` archive into the state directory (HOLM_STATE_DIR or
// --state-dir). It refuses a directory that holds anything unless --force, and refuses while a
// process holds the store open (a server on it), whatever --force says: replacing a live store's
// file under SQLite corrupts it. The archive is unpacked into a directory beside its destination
// and checked (names, sizes, manifest, SQLite's quick_check, its migrations: holm's, none unknown) before anything of
// the old state is removed.
//
// The copy is the same server to the engine as the one it was taken from: the same key (so the
// same server id, box-record.server.ts serverId) and the same box records. A server started on it
// takes back and acts on that server's boxes, which a restore after a loss needs and a test
// restore beside the live server must not do: it is said, and `--as-new-server` makes a copy with
// its own id whose recorded boxes are history, without the original's browser profiles, and with
// its webhooks disabled (asNewServer). The engine shows no lease of a live server to refuse by:
// servers of one cluster share an id and an engine on purpose.

export interface RestoreOptions {
  stateDir?: string;
  force: boolean;
  /** A copy to run beside the original: its own server id, and the boxes it recorded marked removed. */
  asNewServer?: boolean;
  say: (line: string) => void;
}

export async function restore(file: string, opts: RestoreOptions): Promise<Manifest> {
  const e = settings(opts.stateDir);
  if (e.HOLM_STORAGE_BACKEND === "postgres") opts.say("note: HOLM_STORAGE_BACKEND is postgres; this restores a local store's directory all the same");
  const dir = path.resolve(e.HOLM_STATE_DIR);
  const refuseIfOpen = () => {
    const holders = processesUsing(dir, [STORE_FILE, ...STORE_COMPANIONS]);
    if (holders.length) throw new Error(`${dir} has its store open in process ${holders.join(", ")} (a running server?): stop it first`);
  };
  refuseIfOpen();
  if (fs.existsSync(dir) && !fs.statSync(dir).isDirectory()) throw new Error(`${dir} is not a directory: HOLM_STATE_DIR (or --state-dir) must name a directory`);
  const present = fs.existsSync(dir) ? fs.readdirSync(dir).filter((n) => !n.startsWith(".holm-restore-")) : [];
  if (present.length && !opts.force) {
    throw new Error(`${dir} is not empty (${present.slice(0, 4).join(", ")}${present.length > 4 ? ", …" : ""}): restore into an empty directory, or pass --force to replace its store`);
  }
  archiveFile(file);
  const made = !fs.existsSync(dir);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stage = await fsp.mkdtemp(path.join(dir, ".holm-restore-"));
  let restored = false;
  try {
    const manifest = await unpack(file, stage);
    const staged = path.join(stage, STORE_FILE);
    if (!fs.existsSync(staged)) throw new Error(`${file} has no ${STORE_FILE}`);
    let ran: string[];
    const check = new SQLite(staged, { fileMustExist: true });
    try {
      const ok = check.pragma("quick_check", { simple: true });
      if (ok !== "ok") throw new Error(`the archive's store fails SQLite's quick_check: ${String(ok)}`);
      const has = check.prepare("select 1 from sqlite_master where type = 'table' and name = 'kysely_migration'").get();
      ran = has ? (check.prepare("select name from kysely_migration order by name").pluck().all() as string[]) : [];
    } finally {
      check.close();
    }
    // The store's own migration list, not the manifest's: this holm's server refuses a store with
    // one it does not know, so such a store must not replace one it can run. A store on which no
    // holm migration ran (another program's SQLite file, or none of our tables) is not a holm
    // store at all: a server would take it for an empty one and build its tables beside whatever it holds.
    const known = Object.keys(await migrationProvider.getMigrations());
    if (!ran.some((m) => known.includes(m))) {
      throw new Error(`the archive's ${STORE_FILE} is not a holm store (no holm migration ran on it): nothing was replaced; name an archive \`holm backup\` wrote`);
    }
    const unknown = ran.filter((m) => !known.includes(m));
    if (unknown.length) throw new Error(`a newer holm made this store (${unknown.join(", ")}): this holm's server would refuse it; restore it with that release or newer`);

    // Checked: now the old state goes (with --force) and the new comes in by rename; asked again
    // first, as a server (a unit restarting on failure) may have started while the archive unpacked.
    const detached = opts.asNewServer ? asNewServer(stage) : undefined;
    refuseIfOpen();
    // An id an earlier --as-new-server restore left goes too: this store is the archive's server.
    await swapIn(dir, stage, fs.readdirSync(stage), [...STORE_COMPANIONS, SERVER_ID_FILE]);
    giveToOwnerOf(dir, walk(dir));

    const r = manifest.rows;
    opts.say(
      `restored ${path.join(dir, STORE_FILE)} from ${manifest.created_at} (holm ${manifest.holm_version}): ` +
        `${plural(r.box ?? 0, "box", "boxes")}, ${plural(r.user ?? 0, "user")}, ${plural(r.api_key ?? 0, "key")}, ` +
        `${plural(r.trace_entry ?? 0, "trace entry", "trace entries")}, ${plural(manifest.frames, "frame")}`,
    );
    // The key a server on this directory will use: HOLM_SECRET_KEY over secret.key (secret.server.ts).
    if (manifest.secret_key_from_env) opts.say("note: the backed-up server used HOLM_SECRET_KEY: set the same value, or its secrets, saved browser states and boxes do not open");
    else if (!manifest.secret_key) opts.say(`warning: the archive has no server key: ${e.HOLM_SECRET_KEY ? "the server uses HOLM_SECRET_KEY" : fs.existsSync(path.join(dir, KEY_FILE)) ? "the directory's own secret.key is kept" : "a new one will be made"}, and sealed secrets open only with the original`);
    else if (e.HOLM_SECRET_KEY) {
      opts.say(
        "warning: HOLM_SECRET_KEY is set: a server started with it uses that value, not the archive's secret.key, and opens none of the store's " +
          `secrets, saved browser states or boxes: unset HOLM_SECRET_KEY for the server on ${dir} (its secret.key is the archive's now)`,
      );
    }
    if (detached) {
      const { boxes, profiles, webhooks } = detached;
      opts.say(
        `as a new server: its ${boxes === 1 ? "1 box recorded live is" : `${boxes} boxes recorded live are`} marked removed here (they stay the original's), ` +
          `and ${SERVER_ID_FILE} gives a server on this copy its own identity: it takes back none of the original's boxes; keys, users and secrets are the archive's`,
      );
      opts.say(
        `as a new server: its ${profiles === 1 ? "1 browser profile is dropped here (its volume stays the original's)" : `${profiles} browser profiles are dropped here (their volumes stay the original's)`}, ` +
          `and its ${webhooks === 1 ? "1 webhook is" : `${webhooks} webhooks are`} disabled here, their pending deliveries held: enable the ones this copy should send to`,
      );
    } else {
      opts.say(
        "warning: a server started on this copy with the same engine takes back and acts on the boxes of the server the backup was taken from " +
          "(to the engine it is that server): stop that server first, or restore with --as-new-server to run the copy beside it",
      );
    }
    opts.say("the server runs any newer migrations when it starts on it");
    restored = true;
    return manifest;
  } finally {
    await fsp.rm(stage, { recursive: true, force: true });
    // A directory this restore made and could not fill goes again: no empty state left behind.
    if (made && !restored) await fsp.rmdir(dir).catch(() => undefined);
  }
}

/**
 * Makes the staged store a new server's: a fresh id beside it; every box it records as live
 * marked removed, as those containers are the original's (removing one here would remove it
 * there); its browser profiles dropped, as their volumes are the original's (a box here would
 * mount one, a delete remove it); its webhooks disabled, as their receivers are the original's
 * (their pending deliveries held, not sent again). Answers how many of each.
 */
function asNewServer(stage: string): { boxes: number; profiles: number; webhooks: number } {
  const store = new SQLite(path.join(stage, STORE_FILE), { fileMustExist: true });
  let n: { boxes: number; profiles: number; webhooks: number };
  try {
    // A store from an older holm may lack a table: nothing of that kind to take from the original.
    const has = (table: string) => !!store.prepare("select 1 from sqlite_master where type = 'table' and name = ?").get(table);
    n = store.transaction(() => ({
      boxes: store
        .prepare("update box set state = 'gone', removed_at_ms = ?, reason = ? where removed_at_ms is null")
        .run(Date.now(), "the store was restored as a new server: this box is the original server's").changes,
      profiles: has("browser_profile") ? store.prepare("delete from browser_profile").run().changes : 0,
      webhooks: has("webhook")
        ? (store.prepare("update webhook_delivery set next_at_ms = null where status = 'pending'").run(), store.prepare("update webhook set enabled = 0 where enabled = 1").run().changes)
        : 0,
    }))();
  } finally {
    store.close();
  }
  fs.writeFileSync(path.join(stage, SERVER_ID_FILE), `${randomBytes(8).toString("hex")}\n`, { mode: 0o644 });
  return n;
}

/**
 * Puts the staged files (`incoming`) in `dir` in place of its old ones (those names and `old`),
 * by renames only: the old files first move aside into a `.holm-restore-old-` directory (which a
 * later restore ignores, as the staging one), then the new ones in. When a rename fails (a file
 * that is a mount point, such as a key mounted from a secret store), every move made is undone,
 * so the directory is as it was: removing the old files first had left a directory with neither
 * store (a review found only the key left). The old files are removed once all is in place. An
 * interrupt (Ctrl-C) during the renames, which take milliseconds, is ignored: it would leave half.
 * A kill -9 there cannot be: the aside directory holds a marker until every new file is in, and no
 * server starts on the directory while it does (app/utils/restore-marker.server.ts).
 */
async function swapIn(dir: string, stage: string, incoming: string[], old: string[]): Promise<void> {
  const aside = await fsp.mkdtemp(path.join(dir, RESTORE_ASIDE_PREFIX));
  // Until every new file is in: a server will not start on the directory while it is there.
  const unfinished = path.join(aside, RESTORE_UNFINISHED);
  await fsp.writeFile(unfinished, `holm restore (process ${process.pid}) moving files; kept if it was cut off\n`);
  const moved: [string, string][] = [];
  const hold = () => undefined;
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(sig, hold);
  try {
    try {
      for (const name of new Set([...old, ...incoming])) {
        const from = path.join(dir, name);
        if (!fs.lstatSync(from, { throwIfNoEntry: false })) continue;
        await fsp.rename(from, path.join(aside, name));
        moved.push([from, path.join(aside, name)]);
      }
      for (const name of incoming) {
        await fsp.rename(path.join(stage, name), path.join(dir, name));
        moved.push([path.join(stage, name), path.join(dir, name)]);
      }
      await fsp.unlink(unfinished);
    } catch (err) {
      const undone = await Promise.resolve().then(async () => {
        for (const [from, to] of moved.reverse()) await fsp.rename(to, from);
        await fsp.rm(unfinished, { force: true });
        await fsp.rmdir(aside);
        return true;
      }).catch(() => false);
      const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      throw new Error(
        undone
          ? `could not move ${(err as { path?: string }).path ?? "a file"} (${why}): nothing was replaced, ${dir} is as it was`
          : `could not move ${(err as { path?: string }).path ?? "a file"} (${why}), nor every file back: the old state's files are in ${aside}; move them back, or restore again`,
      );
    }
  } finally {
    for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.off(sig, hold);
  }
  await fsp.rm(aside, { recursive: true, force: true });
}

/** The archive is a readable file: said before anything is made. */
function archiveFile(file: string): void {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(code === "ENOENT" ? `no file ${path.resolve(file)} to restore from` : `cannot read ${path.resolve(file)} (${code ?? (err as Error).message})`);
  }
  if (!st.isFile()) throw new Error(`${path.resolve(file)} is not a file: name a holm backup archive (.tar.gz)`);
  try {
    fs.accessSync(file, fs.constants.R_OK);
  } catch {
    throw new Error(`${path.resolve(file)} is not readable by this user: run as the user that can read it (root)`);
  }
}

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const d of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, d.name);
    out.push(p);
    if (d.isDirectory()) out.push(...walk(p));
  }
  return out;
}
