import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import SQLite from "better-sqlite3";
import tar from "tar-stream";
import { migrationProvider } from "../../db/migrations";
import { FORMAT, MANIFEST, type Manifest } from "./backup";
import { FRAMES_DIR, KEY_FILE, POOL_CLAIMS_FILE, STORE_COMPANIONS, STORE_FILE, giveToOwnerOf, plural, processesUsing, settings } from "./state-dir";

// `holm restore FILE`: a `holm backup` archive into the state directory (HOLM_STATE_DIR or
// --state-dir). It refuses a directory that holds anything unless --force, and refuses while a
// process holds the store open (a server on it), whatever --force says: replacing a live store's
// file under SQLite corrupts it. The archive is unpacked into a directory beside its destination
// and checked (names, manifest, SQLite's quick_check) before anything of the old state is removed.

export interface RestoreOptions {
  stateDir?: string;
  force: boolean;
  say: (line: string) => void;
}

/** The only names an archive may hold: nothing can be written outside the state directory. */
const NAME = new RegExp(`^(${[MANIFEST, STORE_FILE, KEY_FILE, POOL_CLAIMS_FILE].map((n) => n.replace(/\./g, "\\.")).join("|")}|${FRAMES_DIR}/[0-9a-f]{2}/[0-9a-f]{16,128}\\.png)$`);

export async function restore(file: string, opts: RestoreOptions): Promise<Manifest> {
  const e = settings(opts.stateDir);
  if (e.HOLM_STORAGE_BACKEND === "postgres") opts.say("note: HOLM_STORAGE_BACKEND is postgres; this restores a local store's directory all the same");
  const dir = path.resolve(e.HOLM_STATE_DIR);
  const holders = processesUsing(dir, [STORE_FILE, ...STORE_COMPANIONS]);
  if (holders.length) throw new Error(`${dir} has its store open in process ${holders.join(", ")} (a running server?): stop it first`);
  const present = fs.existsSync(dir) ? fs.readdirSync(dir).filter((n) => !n.startsWith(".holm-restore-")) : [];
  if (present.length && !opts.force) {
    throw new Error(`${dir} is not empty (${present.slice(0, 4).join(", ")}${present.length > 4 ? ", …" : ""}): restore into an empty directory, or pass --force to replace its store`);
  }
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stage = await fsp.mkdtemp(path.join(dir, ".holm-restore-"));
  try {
    const manifest = await unpack(file, stage);
    const staged = path.join(stage, STORE_FILE);
    if (!fs.existsSync(staged)) throw new Error(`${file} has no ${STORE_FILE}`);
    const check = new SQLite(staged, { fileMustExist: true });
    try {
      const ok = check.pragma("quick_check", { simple: true });
      if (ok !== "ok") throw new Error(`the archive's store fails SQLite's quick_check: ${String(ok)}`);
    } finally {
      check.close();
    }

    // Checked: now the old state goes (with --force) and the new comes in by rename.
    const incoming = fs.readdirSync(stage);
    for (const name of [...STORE_COMPANIONS, ...incoming]) await fsp.rm(path.join(dir, name), { recursive: true, force: true });
    for (const name of incoming) await fsp.rename(path.join(stage, name), path.join(dir, name));
    giveToOwnerOf(dir, walk(dir));

    const r = manifest.rows;
    opts.say(
      `restored ${path.join(dir, STORE_FILE)} from ${manifest.created_at} (holm ${manifest.holm_version}): ` +
        `${plural(r.box ?? 0, "box", "boxes")}, ${plural(r.user ?? 0, "user")}, ${plural(r.api_key ?? 0, "key")}, ` +
        `${plural(r.trace_entry ?? 0, "trace entry", "trace entries")}, ${plural(manifest.frames, "frame")}`,
    );
    if (manifest.secret_key_from_env) opts.say("note: the backed-up server used HOLM_SECRET_KEY: set the same value, or its secrets, saved browser states and boxes do not open");
    else if (!manifest.secret_key) opts.say(`warning: the archive has no server key: ${fs.existsSync(path.join(dir, KEY_FILE)) ? "the directory's own secret.key is kept" : "a new one will be made"}, and sealed secrets open only with the original`);
    const known = Object.keys(await migrationProvider.getMigrations());
    const unknown = manifest.migrations.filter((m) => !known.includes(m));
    if (unknown.length) opts.say(`warning: a newer holm made this store (${unknown.join(", ")}): this holm's server will refuse it; run that release or newer`);
    else opts.say("the server runs any newer migrations when it starts on it");
    return manifest;
  } finally {
    await fsp.rm(stage, { recursive: true, force: true });
  }
}

async function unpack(file: string, into: string): Promise<Manifest> {
  let manifest: Manifest | undefined;
  const extract = tar.extract();
  extract.on("entry", (header, stream, next) => {
    const done = (err?: unknown) => (err ? extract.destroy(err as Error) : next());
    if (header.type !== "file" || !NAME.test(header.name)) {
      stream.resume();
      return done(new Error(`${file} holds ${header.name}, which no holm backup has: refused`));
    }
    if (header.name === MANIFEST) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: unknown) => chunks.push(c as Buffer));
      stream.on("end", () => {
        try {
          manifest = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Manifest;
          done();
        } catch (err) {
          done(err);
        }
      });
      return;
    }
    const to = path.join(into, header.name);
    fs.mkdirSync(path.dirname(to), { recursive: true, mode: 0o700 });
    const mode = header.name === KEY_FILE || header.name === STORE_FILE ? 0o600 : 0o644;
    pipeline(stream, fs.createWriteStream(to, { mode })).then(() => done(), done);
  });
  await pipeline(fs.createReadStream(file), createGunzip(), extract);
  if (!manifest) throw new Error(`${file} has no ${MANIFEST}: not a holm backup (or cut short)`);
  if (manifest.format !== FORMAT) throw new Error(`${file} is backup format ${manifest.format}; this holm reads format ${FORMAT}`);
  return manifest;
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
