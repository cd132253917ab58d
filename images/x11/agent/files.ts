// Files in the box: read, write, list, grep, glob. Relative paths start at $HOME. Walks never
// follow symlinked directories and skip /proc, /sys and /dev, so a grep from / ends.
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import vm from "node:vm";
import { AgentError } from "./errors";

export const MAX_FILE_BYTES = 64 * 1024 * 1024;
const GREP_MAX_FILE = 16 * 1024 * 1024;
const WALK_BUDGET_MS = 20_000;
const WALK_MAX_ENTRIES = 500_000;
const SKIP_DIRS = new Set(["/proc", "/sys", "/dev"]);
/** Past the walk's own budget, a grep or glob stuck in one pattern test is stopped (see `bounded`). */
const HARD_STOP_MS = WALK_BUDGET_MS + 2_000;
const READ_CHUNK = 1024 * 1024;
/** The first read of a file that states no size (procfs): a multiple of 8 (see `readAtMost`). */
const FIRST_CHUNK = 64 * 1024;

export function resolvePath(p: string, home: string): string {
  if (!p) throw new AgentError("bad_request", "path is empty");
  if (p.includes("\0")) throw new AgentError("bad_request", "path holds a NUL byte");
  return path.resolve(home, p);
}

function fsError(err: unknown, p: string): AgentError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ENOENT" || code === "ENOTDIR") return new AgentError("not_found", `${p} does not exist`);
  if (code === "EISDIR") return new AgentError("bad_request", `${p} is a directory`);
  if (code === "EACCES" || code === "EPERM") return new AgentError("failed", `${p}: permission denied`);
  return new AgentError("failed", `${p}: ${(err as Error).message}`);
}

export async function readFile(p: string, home: string): Promise<{ path: string; contents_base64: string; bytes: number }> {
  const full = resolvePath(p, home);
  try {
    const st = await fsp.stat(full);
    if (st.isDirectory()) throw new AgentError("bad_request", `${full} is a directory`);
    // A device or FIFO says size 0 and never ends (/dev/zero filled the agent's memory and killed it).
    if (!st.isFile()) throw new AgentError("bad_request", `${full} is not a regular file`);
    if (st.size > MAX_FILE_BYTES) throw new AgentError("bad_request", `${full} is ${st.size} bytes; the limit is ${MAX_FILE_BYTES}`);
    const data = await readAtMost(full, MAX_FILE_BYTES, st.size);
    if (!data) throw new AgentError("bad_request", `${full} goes on past ${MAX_FILE_BYTES} bytes (it said ${st.size}); the limit is ${MAX_FILE_BYTES}`);
    return { path: full, contents_base64: data.toString("base64"), bytes: data.length };
  } catch (err) {
    if (err instanceof AgentError) throw err;
    throw fsError(err, full);
  }
}

/**
 * A file's bytes, or undefined past `max`. The size a file states is not trusted: procfs and
 * sysfs say 0 (or 4096) for what they make up as they are read, and /proc/self/pagemap then
 * gives 8 bytes for every page of the address space: reading it whole filled the agent's memory
 * and the kernel killed it, and the box with it. The first read asks for the stated size and one
 * byte more (a file that ends there takes one read, no larger buffer); later ones are whole
 * chunks: pagemap refuses a read that is not a multiple of 8 bytes.
 */
async function readAtMost(full: string, max: number, stated: number): Promise<Buffer | undefined> {
  const fh = await fsp.open(full, "r");
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const buf = Buffer.allocUnsafe(chunks.length ? READ_CHUNK : firstChunk(stated, max));
      const { bytesRead } = await fh.read(buf, 0, buf.length, null);
      if (bytesRead === 0) return Buffer.concat(chunks, total);
      chunks.push(buf.subarray(0, bytesRead));
      total += bytesRead;
      if (total > max) return undefined;
    }
  } finally {
    await fh.close();
  }
}

const firstChunk = (stated: number, max: number): number => (stated > 0 ? Math.min(stated, max) + 1 : FIRST_CHUNK);

/** Where the synchronous reads land (one at a time), so a grep over many files allocates per file only what it keeps. */
let scratch: Buffer | undefined;

/** `readAtMost` for the synchronous walks (grep). */
function readAtMostSync(full: string, max: number): Buffer | undefined {
  const fd = fs.openSync(full, "r");
  scratch ??= Buffer.allocUnsafe(READ_CHUNK);
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const n = fs.readSync(fd, scratch, 0, READ_CHUNK, null);
      if (n === 0) return Buffer.concat(chunks, total);
      chunks.push(Buffer.from(scratch.subarray(0, n)));
      total += n;
      if (total > max) return undefined;
    }
  } finally {
    fs.closeSync(fd);
  }
}

const BOUNDED = new vm.Script("work()");

/**
 * Runs a synchronous walk with its pattern tests, stopped at HARD_STOP_MS. The walk checks its
 * budget between entries, but a pattern that backtracks (grep's `(a+)+$` over a line of a's, a
 * glob of many `**` over a deep path) stays in one test for hours, and the agent with it: no
 * input, frame or health answered. V8 ends a vm script at its timeout, in a regular expression too.
 */
function bounded<T>(what: string, work: () => T): T {
  try {
    return BOUNDED.runInContext(vm.createContext({ work }), { timeout: HARD_STOP_MS }) as T;
  } catch (err) {
    if ((err as NodeJS.ErrnoException)?.code !== "ERR_SCRIPT_EXECUTION_TIMEOUT") throw err;
    throw new AgentError("bad_request", `the ${what} pattern took over ${HARD_STOP_MS} ms on one path or line (it backtracks too much); make it simpler`);
  }
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export async function writeFile(p: string, contentsBase64: string, home: string): Promise<{ path: string; bytes: number }> {
  const full = resolvePath(p, home);
  const clean = contentsBase64.replace(/\s+/g, "");
  if (clean.length % 4 === 1 || !BASE64.test(clean)) throw new AgentError("bad_request", "contents_base64 is not base64");
  const data = Buffer.from(clean, "base64");
  if (data.length > MAX_FILE_BYTES) throw new AgentError("bad_request", `contents are ${data.length} bytes; the limit is ${MAX_FILE_BYTES}`);
  await refuseDeviceTrees(full);
  try {
    await makeParents(path.dirname(full));
    await fsp.writeFile(full, data);
  } catch (err) {
    throw fsError(err, full);
  }
  return { path: full, bytes: data.length };
}

const underDeviceTree = (p: string) => [...SKIP_DIRS].some((d) => p === d || p.startsWith(`${d}/`));

/**
 * Writes under /proc, /sys and /dev are refused: they are the kernel's and the devices', not
 * files (Node's recursive mkdir looped there forever, a CPU spinning and the call hanging). The
 * real path of the nearest existing parent is checked too, so a symlink into them is refused.
 */
async function refuseDeviceTrees(full: string): Promise<void> {
  const refuse = () => new AgentError("bad_request", `${full} is under /proc, /sys or /dev; files are not written there`);
  if (underDeviceTree(full)) throw refuse();
  for (let at = full; ; ) {
    let real: string | undefined;
    try {
      real = await fsp.realpath(at);
    } catch {
      /* not there (or not reachable): its parent decides */
    }
    if (real !== undefined) {
      if (underDeviceTree(path.join(real, path.relative(at, full)))) throw refuse();
      return;
    }
    const up = path.dirname(at);
    if (up === at) return;
    at = up;
  }
}

/**
 * `mkdir -p`, one level at a time: at most one mkdir per missing level of an absolute path, so it
 * ends whatever the file system answers (Node's `recursive: true` spun forever under procfs).
 */
async function makeParents(dir: string): Promise<void> {
  const missing: string[] = [];
  for (let at = dir; ; ) {
    try {
      const st = await fsp.stat(at);
      if (!st.isDirectory()) throw Object.assign(new Error(`${at} is not a directory`), { code: "ENOTDIR" });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
    missing.push(at);
    const up = path.dirname(at);
    if (up === at) break;
    at = up;
  }
  for (const d of missing.reverse()) {
    try {
      await fsp.mkdir(d);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
}

export interface Entry {
  name: string;
  kind: "file" | "dir" | "symlink" | "other";
  size: number;
  mtime_ms: number;
}

export async function listFiles(p: string, home: string): Promise<{ path: string; entries: Entry[]; cut: boolean }> {
  const full = resolvePath(p, home);
  let names: string[];
  try {
    const st = await fsp.stat(full);
    if (!st.isDirectory()) throw new AgentError("bad_request", `${full} is not a directory`);
    names = await fsp.readdir(full);
  } catch (err) {
    if (err instanceof AgentError) throw err;
    throw fsError(err, full);
  }
  names.sort();
  const cut = names.length > 10_000;
  const entries = await Promise.all(
    names.slice(0, 10_000).map(async (name): Promise<Entry> => {
      try {
        const st = await fsp.lstat(path.join(full, name));
        const kind = st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "dir" : st.isFile() ? "file" : "other";
        return { name, kind, size: st.size, mtime_ms: Math.round(st.mtimeMs) };
      } catch {
        return { name, kind: "other", size: 0, mtime_ms: 0 };
      }
    }),
  );
  return { path: full, entries, cut };
}

/** Walks files under `root` (or `root` itself); `visit` returns false to stop. Returns true if stopped early. */
function walk(root: string, visit: (file: string, rel: string) => boolean, prune?: (relDir: string) => boolean): boolean {
  const started = Date.now();
  let seen = 0;
  let st: fs.Stats;
  try {
    st = fs.statSync(root);
  } catch (err) {
    throw fsError(err, root);
  }
  if (!st.isDirectory()) return !visit(root, path.basename(root));
  const stack: string[] = [root];
  while (stack.length) {
    const dir = stack.pop() as string;
    let ents: fs.Dirent[];
    try {
      ents = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    ents.sort((a, b) => (a.name < b.name ? 1 : a.name > b.name ? -1 : 0));
    const subdirs: string[] = [];
    for (const e of ents) {
      if (++seen > WALK_MAX_ENTRIES || Date.now() - started > WALK_BUDGET_MS) return true;
      const full = path.join(dir, e.name);
      const rel = path.relative(root, full);
      if (e.isDirectory()) {
        if (SKIP_DIRS.has(full) || (prune && prune(rel))) continue;
        subdirs.push(full);
      } else if (e.isFile()) {
        if (!visit(full, rel)) return true;
      }
    }
    // Depth-first in name order: push in reverse so the first name is walked first.
    for (const d of subdirs) stack.push(d);
  }
  return false;
}

/** Glob → RegExp over "/"-separated relative paths: *, ?, [..], {a,b}, and ** for any depth. */
export function globToRegExp(glob: string): RegExp {
  let re = "";
  let depth = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "*") {
      if (glob[i + 1] === "*") {
        const slash = glob[i + 2] === "/";
        re += slash ? "(?:.*/)?" : ".*";
        i += slash ? 2 : 1;
      } else re += "[^/]*";
    } else if (c === "?") re += "[^/]";
    else if (c === "[") {
      const close = glob.indexOf("]", i + 2);
      if (close === -1) re += "\\[";
      else {
        let body = glob.slice(i + 1, close).replace(/\\/g, "\\\\");
        if (body[0] === "!") body = "^" + body.slice(1);
        re += `[${body}]`;
        i = close;
      }
    } else if (c === "{") {
      depth++;
      re += "(?:";
    } else if (c === "}" && depth > 0) {
      depth--;
      re += ")";
    } else if (c === "," && depth > 0) re += "|";
    else re += c.replace(/[.+^$()|\\\]{}]/g, "\\$&");
  }
  if (depth > 0) throw new AgentError("bad_request", `glob "${glob}" has an unclosed {`);
  try {
    return new RegExp(`^${re}$`);
  } catch {
    throw new AgentError("bad_request", `glob "${glob}" is not valid`);
  }
}

export interface GrepOptions {
  pattern: string;
  path?: string;
  include?: string;
  ignore_case?: boolean;
  limit?: number;
}

export async function grep(o: GrepOptions, home: string): Promise<{ matches: Array<{ path: string; line: number; text: string }>; cut: boolean }> {
  let re: RegExp;
  try {
    re = new RegExp(o.pattern, o.ignore_case ? "i" : "");
  } catch (err) {
    throw new AgentError("bad_request", `pattern is not a valid regular expression: ${(err as Error).message}`);
  }
  const root = resolvePath(o.path ?? home, home);
  const limit = o.limit ?? 200;
  const include = o.include ? globToRegExp(o.include) : null;
  const includeByPath = Boolean(o.include?.includes("/"));
  const matches: Array<{ path: string; line: number; text: string }> = [];
  let cut = false;
  const visit = (file: string, rel: string): boolean => {
    if (include && !include.test(includeByPath ? rel : path.basename(file))) return true;
    let data: Buffer;
    try {
      const st = fs.statSync(file);
      if (!st.isFile() || st.size > GREP_MAX_FILE) return true;
      const got = readAtMostSync(file, GREP_MAX_FILE);
      if (!got) return true;
      data = got;
    } catch {
      return true;
    }
    if (data.subarray(0, 8000).includes(0)) return true; // binary
    const lines = data.toString("utf8").split("\n");
    for (let i = 0; i < lines.length; i++) {
      if (re.test(lines[i])) {
        if (matches.length >= limit) {
          cut = true;
          return false;
        }
        matches.push({ path: file, line: i + 1, text: lines[i].slice(0, 1000) });
      }
    }
    return true;
  };
  const stopped = bounded("grep", () => walk(root, visit));
  return { matches, cut: cut || stopped };
}

export async function glob(pattern: string, base: string | undefined, limit: number | undefined, home: string): Promise<{ paths: string[]; cut: boolean }> {
  let root = resolvePath(base ?? home, home);
  let rel = pattern;
  if (path.isAbsolute(pattern)) {
    // Walk from the longest prefix without wildcards.
    const parts = pattern.split("/");
    let i = 0;
    while (i < parts.length - 1 && !/[*?[{]/.test(parts[i])) i++;
    root = parts.slice(0, i).join("/") || "/";
    rel = parts.slice(i).join("/");
  }
  const re = globToRegExp(rel);
  const max = limit ?? 1000;
  const segments = rel.includes("**") ? Infinity : rel.split("/").length;
  const paths: string[] = [];
  let cut = false;
  const visit = (file: string, r: string): boolean => {
    if (!re.test(r)) return true;
    if (paths.length >= max) {
      cut = true;
      return false;
    }
    paths.push(file);
    return true;
  };
  const stopped = bounded("glob", () => walk(root, visit, (relDir) => relDir.split("/").length >= segments));
  paths.sort();
  return { paths, cut: cut || stopped };
}
