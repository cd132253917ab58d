import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import Docker from "dockerode";
import { registerSecret, serverLogFile } from "./log-secrets";
import { ON_POSTGRES, createTestDatabase, databaseUrl, dropTestDatabases } from "./postgres";

// Runs the built server (`npm run build` first) as a real process, the way `npm start` does.

export const ROOT = path.resolve(import.meta.dirname, "../..");
export const docker = new Docker({ socketPath: "/var/run/docker.sock" });

/** Every box a test run launches carries this label, so cleanup finds them even after a crash. */
export const RUN_LABEL = process.env.HOLM_TEST_RUN ?? `t${process.pid}`;

/**
 * HOLM_TEST_STORE=postgres: every test server that does not ask for the memory store runs on
 * PostgreSQL (`local` and the default alike), each state directory with a database of its own,
 * so the whole suite runs on PostgreSQL with one variable. The databases are dropped after each
 * test file (below), and by the integration teardown for a run that crashed.
 */
const databases = new Map<string, string>();
/** Server processes still running, stopped before their databases are dropped. */
const running = new Set<ChildProcess>();

/** Drops the databases this module made (stopping any server still on one first). */
export async function dropTestServerDatabases(): Promise<void> {
  if (databases.size === 0) return;
  await Promise.all(
    [...running].map(async (child) => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGKILL");
        await exited;
      }
    }),
  );
  const names = [...databases.values()];
  databases.clear();
  await dropTestDatabases(names);
}

if (process.env.VITEST_WORKER_ID) {
  // Registered when a test file imports this module, so it runs after that file's own afterAll
  // (hooks run last-registered first): even when a test failed, its databases go. (Not in the
  // global setup's process, which has no suite to attach it to.)
  const { afterAll } = await import("vitest");
  afterAll(dropTestServerDatabases);
}

/**
 * The store settings of a new server: PostgreSQL instead of SQLite when the run asks for it, and
 * a database for a server that asks for `postgres` without naming one.
 */
async function storeEnv(extra: Record<string, string>, stateDir: string): Promise<Record<string, string>> {
  const backend = extra.HOLM_STORAGE_BACKEND;
  const wanted = backend === "postgres" ? !extra.HOLM_DATABASE_URL : ON_POSTGRES && backend !== "memory";
  if (!wanted) return {};
  let name = databases.get(stateDir);
  if (!name) {
    name = await createTestDatabase(RUN_LABEL);
    databases.set(stateDir, name);
  }
  return { HOLM_STORAGE_BACKEND: "postgres", HOLM_DATABASE_URL: databaseUrl(name) };
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
    srv.on("error", reject);
  });
}

export interface TestServer {
  base: string;
  /** The server token; "" for a server in open mode (started with `HOLM_SERVER_TOKEN: ""`). */
  token: string;
  /** The server process, for checks from outside (its memory in /proc). */
  pid: number;
  stateDir: string;
  /** Where its store is: the SQLite file (`local`; none for `memory`) or the PostgreSQL database. */
  store: { kind: "sqlite"; file: string } | { kind: "postgres"; url: string };
  env: Record<string, string>;
  logs: () => string;
  /** fetch against the server with the token (none in open mode). */
  api: (p: string, init?: RequestInit & { json?: unknown }) => Promise<Response>;
  stop: (signal?: NodeJS.Signals) => Promise<void>;
  /** Starts a new process with the same settings (same port, state dir, secret). */
  restart: () => Promise<TestServer>;
}

/**
 * Starts build/server.js. With a server token by default; `HOLM_SERVER_TOKEN: ""` starts it in
 * open mode (no token), and `HOLM_SERVER_ADDR` may name another address to listen on.
 */
export async function startServer(extra: Record<string, string> = {}, reuse?: TestServer, attempt = 1): Promise<TestServer> {
  const port = reuse ? Number(new URL(reuse.base).port) : await freePort();
  const stateDir = reuse?.stateDir ?? extra.HOLM_STATE_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), "holm-test-"));
  // A token named in `extra` is kept (several servers sharing one), "" starts in open mode.
  const token = reuse?.token ?? extra.HOLM_SERVER_TOKEN ?? randomBytes(24).toString("hex");
  const env: Record<string, string> = reuse?.env ?? {
    NODE_ENV: "production",
    HOLM_SERVER_ADDR: `127.0.0.1:${port}`,
    HOLM_SERVER_TOKEN: token,
    HOLM_STATE_DIR: stateDir,
    HOLM_BOX_LABELS: `holm.test=${RUN_LABEL}`,
    // The engine is every checkout's on this machine: a test server prunes no image unless a test asks.
    HOLM_IMAGE_PRUNE_AFTER: "0",
    HOLM_ROOT: ROOT,
    // Profiling a bench's server: HOLM_PROF_NODE_OPTIONS="--require ./bench/profiler.cjs" (NODE_OPTIONS refuses --cpu-prof).
    ...(process.env.HOLM_PROF_NODE_OPTIONS ? { NODE_OPTIONS: process.env.HOLM_PROF_NODE_OPTIONS } : {}),
    ...extra,
    ...(reuse ? {} : await storeEnv(extra, stateDir)),
  };
  // HOLM_TEST_RESOLV_CONF (the test's, not the server's): the server alone resolves names through
  // that file, bound over /etc/resolv.conf in a mount namespace of its own (root; the machine's
  // file is untouched), so a test can give it a nameserver that never answers.
  const { HOLM_TEST_RESOLV_CONF: resolvConf, ...serverEnv } = env;
  const [cmd, args] = resolvConf
    ? ["unshare", ["-m", "sh", "-c", 'mount --bind "$1" /etc/resolv.conf && exec "$0" "$2"', process.execPath, resolvConf, path.join(ROOT, "build/server.js")]]
    : [process.execPath, [path.join(ROOT, "build/server.js")]];
  const child: ChildProcess = spawn(cmd, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/root", ...serverEnv },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  // The secrets this server was given, for the run's check of every server log (log-secrets.ts).
  for (const k of ["HOLM_SERVER_TOKEN", "HOLM_METRICS_TOKEN", "HOLM_SECRET_KEY", "CRON_SECRET"]) registerSecret(env[k], k);
  registerSecret(env.HOLM_REDIS_URL && /^rediss?:\/\/[^:]*:([^@]+)@/.exec(env.HOLM_REDIS_URL)?.[1], "the Redis password");
  // Its whole output, kept in the run's log directory as well as in memory.
  const file = fs.createWriteStream(serverLogFile(port), { flags: "a", mode: 0o600 });
  let out = "";
  child.stdout!.on("data", (d) => ((out += d), file.write(d)));
  child.stderr!.on("data", (d) => ((out += d), file.write(d)));
  child.once("close", () => file.end());
  let stopping = false;
  const exited = new Promise<number | null>((resolve) =>
    child.on("exit", (code, signal) => {
      running.delete(child);
      // A server that dies under a test says so in its log, outside the JSON lines the summary of
      // scripts/test.sh leaves out: a failure caused by a dead server then names it.
      if (!stopping) file.write(`holm test server ${env.HOLM_SERVER_ADDR} exited by itself: code ${code}, signal ${signal}\n`);
      resolve(code);
    }),
  );
  const base = `http://${env.HOLM_SERVER_ADDR}`;
  const listening = new RegExp(`listening on http://\\S*:${new URL(base).port || 80} `);
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) {
      // freePort's port can be taken by another suite's process before the server binds it (the
      // suites run side by side): a port of our own choosing is tried again, a given one is not.
      if (!reuse && !extra.HOLM_SERVER_ADDR && /EADDRINUSE/.test(out) && attempt < 4) return startServer(extra, undefined, attempt + 1);
      throw new Error(`server exited (${child.exitCode}):\n${out}`);
    }
    try {
      // Only once this child has said it listens: until then the port may be another process's
      // (freePort's port taken in between), which would answer the health check in its place and
      // take the test's requests (CI run 49's box-metadata tests talked to a server that another
      // test run on the machine had started, and lost it when that run stopped it).
      const res = await fetch(`${base}/v1/health`);
      if (res.ok && listening.test(out)) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`server did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  // The key it made for itself (agent secrets, VNC passwords and sealed values derive from it).
  try {
    registerSecret(fs.readFileSync(path.join(stateDir, "secret.key"), "utf8").trim(), "the server key (secret.key)");
  } catch {
    /* none yet, or HOLM_SECRET_KEY */
  }
  const server: TestServer = {
    base,
    token,
    store: env.HOLM_STORAGE_BACKEND === "postgres" ? { kind: "postgres", url: env.HOLM_DATABASE_URL! } : { kind: "sqlite", file: path.join(stateDir, "holm.db") },
    pid: child.pid!,
    stateDir,
    env,
    logs: () => out,
    api: (p, init = {}) => {
      const headers = new Headers(init.headers);
      if (token && !headers.has("authorization")) headers.set("authorization", `Bearer ${token}`);
      let body = init.body;
      if (init.json !== undefined) {
        headers.set("content-type", "application/json");
        body = JSON.stringify(init.json);
      }
      return fetch(`${base}${p}`, { ...init, headers, body });
    },
    stop: async (signal = "SIGTERM") => {
      stopping = true;
      if (child.exitCode === null) child.kill(signal);
      await exited;
    },
    restart: () => startServer({}, server),
  };
  return server;
}

/** Removes every container this test run made (by label), whatever state it is in. */
export async function removeTestBoxes(label = RUN_LABEL): Promise<number> {
  const list = () => docker.listContainers({ all: true, filters: { label: [`holm.test=${label}`] } });
  const found = await list();
  // Eight at a time, then once more for what is left: 80 removals at once left 76 containers
  // behind (the engine answered with errors, swallowed here) after a bench.
  for (let round = 0; round < 2; round++) {
    const left = round === 0 ? found : await list();
    for (let i = 0; i < left.length; i += 8) {
      await Promise.all(left.slice(i, i + 8).map((c) => docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => {})));
    }
  }
  const still = await list();
  if (still.length) console.warn(`[tests] ${still.length} container(s) labelled holm.test=${label} could not be removed`);
  return found.length;
}

export async function json<T = any>(res: Response): Promise<T> {
  const text = await res.text();
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new Error(`not JSON (${res.status}): ${text.slice(0, 500)}`);
  }
}

/** Runs a command inside a box's container (for checks from inside the box). */
export async function execIn(boxId: string, argv: string[]): Promise<{ code: number; out: string }> {
  const container = docker.getContainer(`holm-${boxId}`);
  const exec = await container.exec({ Cmd: argv, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({});
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    const sink = new PassThrough();
    sink.on("data", (d: Buffer) => chunks.push(d));
    docker.modem.demuxStream(stream, sink, sink);
    stream.on("end", () => resolve());
    stream.on("error", reject);
  });
  const info = await exec.inspect();
  return { code: info.ExitCode ?? -1, out: Buffer.concat(chunks).toString("utf8") };
}
