// Files in the box: read, write, list, grep, glob. Relative paths start at $HOME. Walks never
// follow symlinked directories and skip /proc, /sys and /dev, so a grep from / ends.
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { AgentError } from "./errors";

export const MAX_FILE_BYTES = 64 * 1024 * 1024;
const GREP_MAX_FILE = 16 * 1024 * 1024;
const WALK_BUDGET_MS = 20_000;
const WALK_MAX_ENTRIES = 500_000;
const SKIP_DIRS = new Set(["/proc", "/sys", "/dev"]);

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
    const data = await fsp.readFile(full);
    return { path: full, contents_base64: data.toString("base64"), bytes: data.length };
  } catch (err) {
    if (err instanceof AgentError) throw err;
    throw fsError(err, full);
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
  const stopped = walk(root, (file, rel) => {
    if (include && !include.test(includeByPath ? rel : path.basename(file))) return true;
    let data: Buffer;
    try {
      const st = fs.statSync(file);
      if (!st.isFile() || st.size > GREP_MAX_FILE) return true;
      data = fs.readFileSync(file);
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
  });
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
  const stopped = walk(
    root,
    (file, r) => {
      if (!re.test(r)) return true;
      if (paths.length >= max) {
        cut = true;
        return false;
      }
      paths.push(file);
      return true;
    },
    (relDir) => relDir.split("/").length >= segments,
  );
  paths.sort();
  return { paths, cut: cut || stopped };
}
