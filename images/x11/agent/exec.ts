// Commands in the box: argv only, never a shell, each in its own process group so a timeout
// kills the whole tree.
import { spawn } from "node:child_process";
import { AgentError } from "./errors";
import { childEnv } from "./proc";
import { DEFAULT_EXEC_MS, MAX_EXEC_MS } from "./schema";

const MAX_OUTPUT = 16 * 1024 * 1024;

export interface ExecResult {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  timed_out: boolean;
  truncated: boolean;
}

export interface ExecOptions {
  timeoutMs?: number;
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string;
  display: string;
  home: string;
}

export function runExec(argv: string[], opts: ExecOptions): Promise<ExecResult> {
  const timeoutMs = Math.min(opts.timeoutMs ?? DEFAULT_EXEC_MS, MAX_EXEC_MS);
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), {
      cwd: opts.cwd ?? opts.home,
      env: { ...childEnv(opts.display), ...opts.env },
      stdio: [opts.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      detached: true,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outLen = 0;
    let errLen = 0;
    let truncated = false;
    let timedOut = false;
    let settled = false;
    const collect = (bufs: Buffer[], c: Buffer, len: number): number => {
      if (len >= MAX_OUTPUT) {
        truncated = true;
        return len;
      }
      const take = c.subarray(0, MAX_OUTPUT - len);
      if (take.length < c.length) truncated = true;
      bufs.push(take);
      return len + take.length;
    };
    child.stdout?.on("data", (c: Buffer) => (outLen = collect(out, c, outLen)));
    child.stderr?.on("data", (c: Buffer) => (errLen = collect(err, c, errLen)));
    const killGroup = (): void => {
      try {
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, timeoutMs);
    const finish = (code: number | null, signal: string | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({
        code,
        signal,
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8"),
        timed_out: timedOut,
        truncated,
      });
    };
    child.on("error", (e: NodeJS.ErrnoException) => {
      // As a shell would say it: 127 for a missing program, 126 for one that cannot run.
      err.push(Buffer.from(`holm: cannot run ${argv[0]}: ${e.code ?? e.message}\n`));
      finish(e.code === "ENOENT" ? 127 : 126, null);
    });
    child.on("exit", (code, signal) => {
      // A background grandchild may keep the pipes open: read what is there, then stop waiting.
      const grace = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish(code, signal);
      }, 200);
      child.on("close", () => {
        clearTimeout(grace);
        finish(code, signal);
      });
    });
    if (opts.stdin !== undefined && child.stdin) {
      child.stdin.on("error", () => undefined);
      child.stdin.end(opts.stdin);
    }
  });
}

/** Starts a program on a screen and leaves it running (the server resolved the app to `argv`). */
export function launch(argv: string[], display: string, home: string): Promise<{ pid: number; argv: string[] }> {
  if (!argv[0]) throw new AgentError("bad_request", "launch needs a program");
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), {
      cwd: home,
      env: childEnv(display),
      stdio: "ignore",
      detached: true,
    });
    child.on("error", (e: NodeJS.ErrnoException) => {
      reject(e.code === "ENOENT" ? new AgentError("not_found", `no program "${argv[0]}" in this box`) : new AgentError("failed", e.message));
    });
    child.on("spawn", () => {
      child.unref();
      resolve({ pid: child.pid ?? 0, argv });
    });
  });
}
