// Runs helper programs (xdotool, xclip, ffmpeg) by argv. Never through a shell: text typed or
// pasted by an agent reaches them as one argv element or on stdin, so "$(rm -rf /)" is just text.
import { spawn } from "node:child_process";
import { AgentError } from "./errors";

/**
 * The environment for anything the agent starts: its own, on `display`. The agent's secret never
 * is in it (loadConfig takes it out of process.env first); this drops it again in case a caller
 * passes it in `extra` (commands come from the AI agent driving the box; they have no use for it).
 */
/**
 * What a child started "on a display" gets besides DISPLAY, by display name: a Wayland screen's
 * name (`wayland:<n>`) maps to its WAYLAND_DISPLAY and XDG_RUNTIME_DIR, and DISPLAY only when its
 * XWayland listens (images/x11/agent/wayland.ts sets these).
 */
export const displayEnv = new Map<string, () => Record<string, string>>();

export function childEnv(display: string | undefined, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const wayland = display ? displayEnv.get(display) : undefined;
  const base: NodeJS.ProcessEnv = { ...process.env };
  if (wayland) delete base.DISPLAY;
  const env: NodeJS.ProcessEnv = { ...base, ...extra, ...(wayland ? wayland() : display ? { DISPLAY: display } : {}) };
  delete env.HOLM_AGENT_SECRET;
  delete env.HOLM_AGENT_SECRET_FILE;
  return env;
}

export interface ToolResult {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

/**
 * What a tool may write to stdout by default. Tools read what the box holds (a clipboard, a
 * window's title), and a process in the box decides how much that is: read whole, 300 MB of
 * clipboard filled the agent's memory and the kernel killed it, and the box with it.
 */
export const TOOL_OUTPUT_MAX = 64 * 1024 * 1024;

/** Thrown (a `failed`) when a tool writes more than its `maxOutput`; the tool is killed. */
export class ToolOutputTooLarge extends AgentError {
  constructor(
    file: string,
    readonly limit: number,
  ) {
    super("failed", `${file} wrote more than ${limit} bytes`);
  }
}

export function runTool(
  file: string,
  args: string[],
  opts: { display?: string; input?: Buffer | string; timeoutMs?: number; env?: Record<string, string>; maxOutput?: number } = {},
): Promise<ToolResult> {
  return new Promise((resolve, reject) => {
    const env = childEnv(opts.display, opts.env);
    // stdout/stderr are pipes we drain; a tool that forks a daemon (xclip) must get "ignore" from its caller instead.
    const child = spawn(file, args, { env, stdio: [opts.input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let done = false;
    const timer = setTimeout(() => {
      if (done) return;
      child.kill("SIGKILL");
      done = true;
      reject(new AgentError("timeout", `${file} did not finish in ${opts.timeoutMs} ms`));
    }, opts.timeoutMs ?? 10_000);
    const maxOutput = opts.maxOutput ?? TOOL_OUTPUT_MAX;
    let outLen = 0;
    child.stdout?.on("data", (c: Buffer) => {
      if (done) return;
      outLen += c.length;
      if (outLen > maxOutput) {
        done = true;
        clearTimeout(timer);
        child.kill("SIGKILL");
        out.length = 0;
        reject(new ToolOutputTooLarge(file, maxOutput));
        return;
      }
      out.push(c);
    });
    // Only the start of stderr is kept: it goes into messages.
    let errLen = 0;
    child.stderr?.on("data", (c: Buffer) => {
      if (errLen < 64 * 1024) err.push(c);
      errLen += c.length;
    });
    child.on("error", (e: NodeJS.ErrnoException) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      reject(e.code === "ENOENT" ? new AgentError("unsupported", `${file} is not installed in this box`) : e);
    });
    child.on("close", (code) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString("utf8") });
    });
    if (opts.input !== undefined && child.stdin) {
      child.stdin.on("error", () => undefined);
      child.stdin.end(opts.input);
    }
  });
}

/** Runs a tool and throws `failed` with its stderr when it exits non-zero. */
export async function runToolOk(file: string, args: string[], opts: Parameters<typeof runTool>[2] = {}): Promise<ToolResult> {
  const r = await runTool(file, args, opts);
  if (r.code !== 0) throw new AgentError("failed", `${file} ${args[0] ?? ""} exited ${r.code}: ${r.stderr.trim().slice(0, 500)}`);
  return r;
}
