import fs from "node:fs";
import path from "node:path";
import SQLite from "better-sqlite3";
import Docker from "dockerode";
import pg from "pg";
import { migrationProvider } from "../../db/migrations";
import { imageRequest, normalizeSpec } from "~/models/spec.server";
import { baseImageTag, imageTag } from "~/runtime/image-source.server";
import { configFileResult, type Env, publicUrl } from "~/utils/env.server";
import { isLoopbackUrl } from "~/utils/loopback";
import { KEY_FILE, STORE_FILE, settings } from "./state-dir";
import { assertRestoreFinished } from "~/utils/restore-marker.server";

// `holm doctor`: what an operator checks before starting (or after upgrading) a server, each as
// ok / warn / fail with what to do about it, from this machine's settings (the same environment
// and configuration file the server reads). It runs beside the server, not through it: most of
// what it checks (the engine, the store, the configuration) is what keeps a server from booting,
// when there is no server to ask. Exit 1 when anything fails.

export type Level = "ok" | "warn" | "fail";
export interface Check {
  level: Level;
  area: string;
  says: string;
  fix?: string;
}

const GIB = 1024 ** 3;
/** Below this free in the state directory: warn (frames and the store grow with every batch). */
export const DISK_WARN_BYTES = 5 * GIB;
export const DISK_FAIL_BYTES = 1 * GIB;
/** Clock skew against the engine or a server that warns (signed tickets and expiries use clocks). */
const SKEW_WARN_MS = 2_000;

export async function doctor(opts: { stateDir?: string }): Promise<Check[]> {
  const checks: Check[] = [];
  const add = (level: Level, area: string, says: string, fix?: string) => checks.push({ level, area, says, ...(fix ? { fix } : {}) });

  let e: Env;
  try {
    e = settings(opts.stateDir);
  } catch (err) {
    add("fail", "config", (err as Error).message, "fix the variables named (environment or HOLM_CONFIG_FILE, default /etc/holm/holm.env)");
    return checks;
  }
  configuration(e, add);
  const docker = await engine(e, add);
  if (docker) await images(docker, add);
  await store(e, add);
  disk(e, add);
  await server(e, add);
  return checks;
}

type Add = (level: Level, area: string, says: string, fix?: string) => void;

function configuration(e: Env, add: Add): void {
  const file = configFileResult();
  add("ok", "config", file?.file ? `valid; ${file.applied.length} setting(s) from ${file.file}, the environment over ${file.overridden.length}` : "valid (environment only; no configuration file)");
  if (file?.skipped) add("warn", "config", `configuration file not read: ${file.skipped}`, "let the server's user read it (0640 root:holm), or name another with HOLM_CONFIG_FILE");
  const { host } = e.HOLM_SERVER_ADDR;
  const loopback = host === "localhost" || host === "::1" || /^127\./.test(host);
  if (!loopback) add("warn", "config", `HOLM_SERVER_ADDR listens on ${host}: boxes reach services bound beyond loopback through their gateway`, "listen on 127.0.0.1:8080 and put a TLS proxy in front (docs/reverse-proxy.md)");
  // With a public URL elsewhere there is no open mode (app/edge/auth.server.ts): /v1 needs a key.
  // The server's own test (open mode ends behind a public URL): *.localhost is loopback too.
  const proxied = e.HOLM_PUBLIC_URL !== undefined && !isLoopbackUrl(e.HOLM_PUBLIC_URL);
  if (!e.HOLM_SERVER_TOKEN) add("warn", "config", `HOLM_SERVER_TOKEN is unset: ${proxied ? "/v1 answers only holm_sk_ keys and sessions (no open mode behind HOLM_PUBLIC_URL)" : "/v1 is open to loopback callers until the first account exists"}`, "set HOLM_SERVER_TOKEN (16+ characters: openssl rand -hex 24)");
  if (e.HOLM_STORAGE_BACKEND === "memory") add("warn", "config", "HOLM_STORAGE_BACKEND is memory: accounts, keys and traces are lost at every restart", "set HOLM_STORAGE_BACKEND=local (or postgres)");
  if (e.HOLM_PUBLIC_URL?.startsWith("http:") && !isLoopbackUrl(e.HOLM_PUBLIC_URL)) {
    add("warn", "config", `HOLM_PUBLIC_URL is ${e.HOLM_PUBLIC_URL}: sessions and keys cross the network in clear`, "serve https through a TLS proxy and set HOLM_PUBLIC_URL=https://…");
  }
}

/** Each engine call's bound: a socket that accepts and never answers would hold doctor forever. */
const ENGINE_ANSWER_MS = 5_000;

class NoAnswer extends Error {}

/** `call` within ENGINE_ANSWER_MS, or NoAnswer. */
function bounded<T>(call: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new NoAnswer()), ENGINE_ANSWER_MS);
  });
  return Promise.race([call, late]).finally(() => clearTimeout(timer));
}

async function engine(e: Env, add: Add): Promise<Docker | undefined> {
  // The modem's own idle timeout (a little later than ours) closes the hung request's socket, so
  // the process can exit once the checks are said.
  const docker = new Docker({ socketPath: e.HOLM_DOCKER_SOCKET, timeout: ENGINE_ANSWER_MS + 1_000 });
  const fix = "start dockerd (systemctl start docker), or set HOLM_DOCKER_SOCKET; the server's user needs the docker group";
  let v: Docker.DockerVersion;
  // dockerode's typings leave info() as any: these are the engine's /info fields.
  let info: { CgroupVersion?: string; CgroupDriver?: string; MemoryLimit?: boolean; SwapLimit?: boolean; PidsLimit?: boolean; SystemTime?: string; DockerRootDir?: string };
  try {
    await bounded(docker.ping());
    v = await bounded(docker.version());
    info = await bounded(docker.info());
  } catch (err) {
    if (err instanceof NoAnswer) {
      add("fail", "engine", `the engine at ${e.HOLM_DOCKER_SOCKET} does not answer (nothing within ${ENGINE_ANSWER_MS / 1000} s): the server would hang on it too`, "restart dockerd (systemctl restart docker), or check what listens on HOLM_DOCKER_SOCKET");
    } else {
      add("fail", "engine", `no Docker engine answers at ${e.HOLM_DOCKER_SOCKET} (${(err as Error).message})`, fix);
    }
    return undefined;
  }
  add("ok", "engine", `Docker ${v.Version} (API ${v.ApiVersion}), cgroup v${info.CgroupVersion ?? "?"} (${info.CgroupDriver ?? "?"})`);
  const missing = (["MemoryLimit", "SwapLimit", "PidsLimit"] as const).filter((k) => info[k] === false);
  if (missing.length) add("warn", "engine", `the kernel does not enforce ${missing.join(", ")}: a box's memory or process limit would not hold`, "enable the memory and pids cgroup controllers (cgroup_enable=memory swapaccount=1 on the kernel command line)");
  if (info.SystemTime) {
    const skew = Date.parse(info.SystemTime) - Date.now();
    if (Math.abs(skew) > SKEW_WARN_MS) add("warn", "clock", `the engine's clock is ${(skew / 1000).toFixed(1)} s off this machine's`, "run NTP (systemd-timesyncd or chrony) on both hosts");
    else add("ok", "clock", `within ${SKEW_WARN_MS / 1000} s of the engine's`);
  }
  return docker;
}

async function images(docker: Docker, add: Add): Promise<void> {
  let tags: string[];
  try {
    tags = [baseImageTag(), imageTag(imageRequest(normalizeSpec({})))];
  } catch (err) {
    add("fail", "images", `cannot tell the box image's tag: ${(err as Error).message}`, "run npm run build in the install directory");
    return;
  }
  const absent: string[] = [];
  for (const tag of tags) {
    try {
      await bounded(docker.getImage(tag).inspect());
    } catch {
      absent.push(tag);
    }
  }
  if (absent.length === 0) add("ok", "images", `${tags.join(", ")} present`);
  else add("warn", "images", `missing ${absent.join(", ")}: the first box waits minutes while the server builds it (the base needs root: debootstrap)`, "build them now, as root: npm run setup (or scripts/build-images.ts)");
}

async function store(e: Env, add: Add): Promise<void> {
  const known = Object.keys(await migrationProvider.getMigrations());
  let ran: string[];
  if (e.HOLM_STORAGE_BACKEND === "memory") return add("ok", "store", "memory: nothing to check");
  try {
    if (e.HOLM_STORAGE_BACKEND === "local") {
      const file = path.join(e.HOLM_STATE_DIR, STORE_FILE);
      const unusable = stateDirProblem(e.HOLM_STATE_DIR);
      if (unusable) return add("fail", "store", unusable.says, unusable.fix);
      // What the server refuses to start on, said here too: it had "does not exist yet" below.
      try {
        assertRestoreFinished(e.HOLM_STATE_DIR);
      } catch (err) {
        return add("fail", "store", (err as Error).message, "move the old state's files back (or restore again), then remove the .holm-restore-old- directory");
      }
      if (!fs.existsSync(file)) return add("ok", "store", `${file} does not exist yet: the first start makes it`);
      const db = new SQLite(file, { readonly: true, fileMustExist: true });
      try {
        const ok = db.pragma("quick_check", { simple: true });
        if (ok !== "ok") return add("fail", "store", `${file} fails SQLite's quick_check: ${String(ok)}`, "restore the last backup (holm restore)");
        const has = db.prepare("select 1 from sqlite_master where name = 'kysely_migration'").get();
        ran = has ? (db.prepare("select name from kysely_migration").pluck().all() as string[]) : [];
      } finally {
        db.close();
      }
    } else {
      const client = new pg.Client({ connectionString: e.HOLM_DATABASE_URL, connectionTimeoutMillis: 5000 });
      await client.connect();
      try {
        const has = await client.query("select to_regclass('kysely_migration') as t");
        ran = has.rows[0]?.t ? (await client.query<{ name: string }>("select name from kysely_migration")).rows.map((r) => r.name) : [];
      } finally {
        await client.end();
      }
    }
  } catch (err) {
    return add("fail", "store", `cannot open the ${e.HOLM_STORAGE_BACKEND} store: ${(err as Error).message}`, e.HOLM_STORAGE_BACKEND === "postgres" ? "check HOLM_DATABASE_URL and that PostgreSQL answers" : "check HOLM_STATE_DIR and its owner");
  }
  const unknown = ran.filter((m) => !known.includes(m));
  const pending = known.filter((m) => !ran.includes(m));
  if (unknown.length) add("fail", "store", `the store has migrations this holm does not know (${unknown.join(", ")}): it was opened by a newer holm`, "run the newer holm again (migrations are forward-only), or restore a backup taken before it");
  else if (ran.length === 0) add("ok", "store", `${e.HOLM_STORAGE_BACKEND}: opens, empty: the first start makes its tables`);
  else if (pending.length) add("warn", "store", `${pending.length} migration(s) will run at the next start (${pending.join(", ")})`, "take a backup first (holm backup, or pg_dump)");
  else add("ok", "store", `${e.HOLM_STORAGE_BACKEND}: opens, ${ran.length} migrations, all current`);
  if (e.HOLM_STORAGE_BACKEND === "local" && !e.HOLM_SECRET_KEY) {
    const key = path.join(e.HOLM_STATE_DIR, KEY_FILE);
    if (fs.existsSync(key) && (fs.statSync(key).mode & 0o077) !== 0) add("warn", "store", `${key} is readable by others`, `chmod 600 ${key}`);
  }
}

/**
 * Why the server could not use the state directory, if it could not: not a directory, or one this
 * user cannot read and write (existsSync says "absent" for a file it may not see, so a store
 * behind a 0700 directory would pass as "not made yet"). A missing directory is fine: the server
 * makes it.
 */
function stateDirProblem(dir: string): { says: string; fix: string } | undefined {
  let st: fs.Stats;
  try {
    st = fs.statSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    return { says: `HOLM_STATE_DIR ${dir} cannot be looked at by this user (uid ${process.getuid?.()}): ${code}`, fix: "run holm doctor as the server's user (holm) or root, or let that user reach the directory" };
  }
  if (!st.isDirectory()) return { says: `HOLM_STATE_DIR ${dir} is not a directory: the server cannot make its store there`, fix: `set HOLM_STATE_DIR to a directory (the server makes a missing one), or move ${dir} away` };
  try {
    fs.accessSync(dir, fs.constants.R_OK | fs.constants.W_OK | fs.constants.X_OK);
  } catch {
    return {
      says: `HOLM_STATE_DIR ${dir} cannot be read and written by this user (uid ${process.getuid?.()}): a server running as it could not open its store`,
      fix: `run holm doctor as the server's user (holm) or root; the directory belongs to that user (chown -R holm: ${dir})`,
    };
  }
  return undefined;
}

function disk(e: Env, add: Add): void {
  let dir = path.resolve(e.HOLM_STATE_DIR);
  while (!fs.existsSync(dir)) dir = path.dirname(dir);
  const s = fs.statfsSync(dir);
  const free = s.bavail * s.bsize;
  const shown = `${(free / GIB).toFixed(1)} GiB free for ${e.HOLM_STATE_DIR}`;
  if (free < DISK_FAIL_BYTES) add("fail", "disk", shown, "free space, or prune sooner (POST /v1/jobs/prune)");
  else if (free < DISK_WARN_BYTES) add("warn", "disk", `${shown} (below ${DISK_WARN_BYTES / GIB} GiB)`, "free space: frames and the store grow with every batch");
  else add("ok", "disk", shown);
}

async function server(e: Env, add: Add): Promise<void> {
  const { host, port } = e.HOLM_SERVER_ADDR;
  const url = `http://${host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host}:${port}/v1/health`;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(3000) });
    const date = res.headers.get("date");
    const skew = date ? Date.parse(date) - Date.now() : 0;
    // An HTTP Date has whole seconds: a second of skew is rounding.
    if (Math.abs(skew) > SKEW_WARN_MS + 1000) add("warn", "clock", `the server's clock (${publicUrl()}) is ${(skew / 1000).toFixed(0)} s off`, "run NTP on both hosts");
    add(res.ok ? "ok" : "warn", "server", `${url} answers ${res.status}`);
  } catch {
    add("ok", "server", `none answers at ${url} (not running, or elsewhere)`);
  }
}
