import fs from "node:fs";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import tar from "tar-stream";
import { z } from "zod";
import { FORMAT, MANIFEST, type Manifest } from "./backup";
import { FRAMES_DIR, KEY_FILE, POOL_CLAIMS_FILE, SERVER_ID_FILE, STORE_FILE } from "./state-dir";

// Reading a `holm backup` archive for `holm restore`: only the names a backup writes, only plain
// files, each no larger than such a file is, all of it within the disk's free space, and a
// manifest with every field restore reads. Anything else is refused while unpacking into the
// staging directory, before restore touches the state directory.

/** The only names an archive may hold: nothing can be written outside the state directory. */
const NAME = new RegExp(`^(${[MANIFEST, STORE_FILE, KEY_FILE, POOL_CLAIMS_FILE, SERVER_ID_FILE].map((n) => n.replace(/\./g, "\\.")).join("|")}|${FRAMES_DIR}/[0-9a-f]{2}/[0-9a-f]{16,128}\\.png)$`);

const MIB = 1024 * 1024;
/**
 * The most each kind of entry holds. A frame is a PNG of one screen (hundreds of KB; a 4K screen
 * of noise stays under 32 MiB); the key is a line of hex; the pool's claims are one line per box
 * start. The store itself has no cap of its own: only the disk's free space bounds it.
 */
const CAPS: { test: (name: string) => boolean; bytes: number; what: string }[] = [
  { test: (n) => n.startsWith(`${FRAMES_DIR}/`), bytes: 32 * MIB, what: "a frame (a PNG of a screen) ever is" },
  { test: (n) => n === KEY_FILE, bytes: 64 * 1024, what: "a server key is" },
  { test: (n) => n === SERVER_ID_FILE, bytes: 1024, what: "a server id is" },
  { test: (n) => n === MANIFEST, bytes: 1 * MIB, what: "a backup's manifest is" },
  { test: (n) => n === POOL_CLAIMS_FILE, bytes: 256 * MIB, what: "a pool's claims file is" },
];
/** Left free on the state directory's disk after unpacking: the server needs room to start. */
const KEEP_FREE_BYTES = 512 * MIB;

const mib = (n: number) => `${(n / MIB).toFixed(1)} MiB`;

const ManifestSchema = z.object({
  format: z.literal(FORMAT),
  created_at: z.string(),
  holm_version: z.string(),
  store: z.literal("local"),
  migrations: z.array(z.string()),
  rows: z.record(z.string(), z.number()),
  frames: z.number().int().nonnegative(),
  frames_missing: z.number().int().nonnegative(),
  secret_key: z.boolean(),
  secret_key_from_env: z.boolean(),
});

/** What zlib and tar-stream say of a file that is not a whole gzip'd tar, in words. */
function unreadable(file: string, err: NodeJS.ErrnoException): Error {
  if (err.code === "Z_DATA_ERROR") return new Error(`${file} is not a gzip file: not a holm backup (those are .tar.gz)`);
  if (err.code === "Z_BUF_ERROR" || /unexpected end of data|unexpected end of file/i.test(err.message)) return new Error(`${file} is cut short: not a whole holm backup (copied before it was written?)`);
  if (/invalid tar header/i.test(err.message)) return new Error(`${file} is gzip'd but not a tar archive: not a holm backup`);
  return err;
}

/** Unpacks `file` into `into` (a new, empty directory), refusing anything a holm backup does not hold. */
export async function unpack(file: string, into: string): Promise<Manifest> {
  let manifestText: string | undefined;
  /** The first refusal: tar-stream's own error (when destroyed with it) is reported as this. */
  let refused: Error | undefined;
  const { bavail, bsize } = fs.statfsSync(into);
  const room = bavail * bsize - KEEP_FREE_BYTES;
  let total = 0;
  const extract = tar.extract();
  extract.on("entry", (header, stream, next) => {
    // Destroying the extractor with an error also errors the entry's stream: heard here, so it
    // does not end the process as an unhandled 'error' event (and the staging directory is removed).
    stream.on("error", () => undefined);
    const refuse = (why: string) => {
      stream.resume();
      refused ??= new Error(`${file} ${why}: refused`);
      extract.destroy(refused);
    };
    const done = (err?: unknown) => (err ? ((refused ??= err as Error), extract.destroy(err as Error)) : next());
    const name = header.name;
    if (header.type === "symlink" || header.type === "link") {
      const kind = header.type === "symlink" ? "symbolic" : "hard";
      return refuse(`is not what holm backup writes: ${name} is a ${kind} link (to ${header.linkname ?? "?"}), and a holm backup holds only files`);
    }
    if (header.type !== "file" || !NAME.test(name)) return refuse(`holds ${name}, which no holm backup has`);
    const size = header.size ?? 0;
    const cap = CAPS.find((c) => c.test(name));
    if (cap && size > cap.bytes) return refuse(`holds ${name}, which is ${mib(size)}: more than ${cap.what} (${mib(cap.bytes)})`);
    total += size;
    if (total > room) return refuse(`unpacks to more than the ${mib(Math.max(room, 0))} free in ${path.dirname(into)} (keeping ${mib(KEEP_FREE_BYTES)} free)`);
    if (name === MANIFEST) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: unknown) => chunks.push(c as Buffer));
      stream.on("end", () => {
        manifestText = Buffer.concat(chunks).toString("utf8");
        done();
      });
      return;
    }
    const to = path.join(into, name);
    fs.mkdirSync(path.dirname(to), { recursive: true, mode: 0o700 });
    const mode = name === KEY_FILE || name === STORE_FILE ? 0o600 : 0o644;
    pipeline(stream, fs.createWriteStream(to, { mode })).then(() => done(), done);
  });
  try {
    await pipeline(fs.createReadStream(file), createGunzip(), extract);
  } catch (err) {
    throw refused ?? unreadable(file, err as NodeJS.ErrnoException);
  }
  if (refused) throw refused;
  if (manifestText === undefined) throw new Error(`${file} has no ${MANIFEST}: not a holm backup (or cut short)`);
  let raw: unknown;
  try {
    raw = JSON.parse(manifestText);
  } catch {
    throw new Error(`${file}'s ${MANIFEST} is not JSON: not a holm backup's manifest`);
  }
  const format = (raw as { format?: unknown } | null)?.format;
  if (format !== FORMAT) throw new Error(`${file} is backup format ${String(format)}; this holm reads format ${FORMAT}`);
  const parsed = ManifestSchema.safeParse(raw);
  if (!parsed.success) {
    const fields = [...new Set(parsed.error.issues.map((i) => i.path.join(".") || "(whole)"))].join(", ");
    throw new Error(`${file}'s ${MANIFEST} is not a holm backup's manifest (${fields} missing or wrong): refused`);
  }
  return parsed.data;
}
