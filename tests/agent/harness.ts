// Test harness: real Xvfb displays on the host, the bundled agent run as a child process, and
// small helpers to look at effects from the X side. Everything spawned here is killed by `cleanup`.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import net from "node:net";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";
import { sign } from "../../images/x11/agent/auth";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const children: ChildProcess[] = [];

export function track(p: ChildProcess): ChildProcess {
  children.push(p);
  return p;
}

/** Kills (the process groups of) everything this file spawned. */
export async function cleanup(): Promise<void> {
  for (const p of children.reverse()) {
    if (p.exitCode !== null || p.signalCode !== null) continue;
    try {
      if (p.pid) process.kill(-p.pid, "SIGKILL");
    } catch {
      p.kill("SIGKILL");
    }
  }
  children.length = 0;
  await sleep(100);
}

/**
 * A host display number for a test file: `n` shifted by HOLM_TEST_DISPLAY_OFFSET, so two
 * checkouts can run their agent tests on one machine at once without sharing an X server.
 */
export function display(n: number): number {
  return n + Number(process.env.HOLM_TEST_DISPLAY_OFFSET ?? 0);
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function until<T>(fn: () => T | Promise<T>, what: string, ms = 5000, every = 25): Promise<NonNullable<T>> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await sleep(every);
  }
}

function spawnBg(cmd: string, args: string[], env: Record<string, string> = {}): ChildProcess {
  const p = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: "ignore", detached: true });
  return track(p);
}

/** Runs a short X client (xdotool, xclip, …) against a display and returns its stdout. */
export function xrun(display: number, cmd: string, args: string[], input?: string): string {
  return execFileSync(cmd, args, { env: { ...process.env, DISPLAY: `:${display}` }, input, encoding: "utf8", timeout: 10_000, stdio: ["pipe", "pipe", "pipe"] });
}

export async function startXvfb(display: number, size = "1280x800x24"): Promise<ChildProcess> {
  for (const f of [`/tmp/.X${display}-lock`, `/tmp/.X11-unix/X${display}`]) fs.rmSync(f, { force: true });
  const p = spawnBg("Xvfb", [`:${display}`, "-screen", "0", size, "-nolisten", "tcp", "-noreset"]);
  await until(() => {
    try {
      xrun(display, "xdpyinfo", []);
      return true;
    } catch {
      return false;
    }
  }, `Xvfb :${display}`, 10_000, 50);
  return p;
}

export async function startFluxbox(display: number): Promise<void> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "holm-fb-"));
  fs.mkdirSync(path.join(home, ".fluxbox"));
  fs.writeFileSync(path.join(home, ".fluxbox/overlay"), "background: none\n");
  spawnBg("fluxbox", [], { DISPLAY: `:${display}`, HOME: home });
  await until(() => {
    try {
      xrun(display, "wmctrl", ["-m"]);
      return true;
    } catch {
      return false;
    }
  }, "fluxbox", 10_000, 50);
}

export function startXterm(display: number, args: string[]): ChildProcess {
  return spawnBg("xterm", args, { DISPLAY: `:${display}`, LANG: "C.UTF-8", LC_ALL: "C.UTF-8" });
}

/**
 * Chromium on `display` with the box's flags (images/x11/entrypoint.sh) and DevTools on a free
 * port; resolves once its first page is listed.
 */
export async function startChromium(display: number): Promise<{ cdpPort: number; proc: ChildProcess }> {
  const cdpPort = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-chromium-"));
  const proc = spawnBg("chromium", [
    "--no-sandbox", "--test-type", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
    "--hide-crash-restore-bubble", "--password-store=basic", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--start-maximized", `--user-data-dir=${path.join(dir, "profile")}`, `--remote-debugging-port=${cdpPort}`, "about:blank",
  ], { DISPLAY: `:${display}` });
  await until(async () => {
    const list = (await (await fetch(`http://127.0.0.1:${cdpPort}/json/list`)).json()) as Array<{ type: string }>;
    return list.some((t) => t.type === "page");
  }, "chromium's first page", 30_000, 200);
  return { cdpPort, proc };
}

export interface CdpPage {
  id: string;
  type: string;
  url: string;
  title: string;
  webSocketDebuggerUrl: string;
}

/** Chromium's own list of pages, from its DevTools on `cdpPort`. */
export async function chromePagesAt(cdpPort: number): Promise<CdpPage[]> {
  const list = (await (await fetch(`http://127.0.0.1:${cdpPort}/json/list`)).json()) as CdpPage[];
  return list.filter((t) => t.type === "page");
}

/** Evaluates in one page over its own CDP socket (not the agent's). */
export async function evalInPage<T>(cdpPort: number, id: string, expression: string): Promise<T> {
  const t = (await chromePagesAt(cdpPort)).find((p) => p.id === id);
  if (!t) throw new Error(`no page ${id}`);
  const ws = new WebSocket(t.webSocketDebuggerUrl);
  try {
    await new Promise((r, j) => ws.once("open", r).once("error", j));
    return await new Promise<T>((resolve, reject) => {
      ws.on("message", (data) => {
        const msg = JSON.parse(String(data));
        if (msg.id !== 1) return;
        if (msg.error || msg.result?.exceptionDetails) reject(new Error(JSON.stringify(msg.error ?? msg.result.exceptionDetails)));
        else resolve(msg.result.result.value as T);
      });
      ws.send(JSON.stringify({ id: 1, method: "Runtime.evaluate", params: { expression, returnByValue: true } }));
    });
  } finally {
    ws.close();
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, "127.0.0.1", () => {
      const a = srv.address();
      srv.close(() => (typeof a === "object" && a ? resolve(a.port) : reject(new Error("no port"))));
    });
  });
}

let bundle: string | null = null;
/** Builds the agent bundle once per test file into a temp dir. */
export function agentBundle(): string {
  if (bundle) return bundle;
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "holm-agent-")), "agent.mjs");
  execFileSync(process.execPath, [path.join(ROOT, "scripts/build-agent.mjs"), out], { stdio: "ignore" });
  bundle = out;
  return out;
}

/** Node that runs the agent: HOLM_AGENT_NODE (e.g. a Node 18 like the box's), else this one. */
export const AGENT_NODE = process.env.HOLM_AGENT_NODE || process.execPath;

export interface Agent {
  url: string;
  secret: string;
  /** When the agent process was spawned (before it started listening). */
  spawnedAt: number;
  proc: ChildProcess;
  log: () => string;
  call<T = any>(method: string, p: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: T; ms: number }>;
}

export async function startAgent(env: Record<string, string>): Promise<Agent> {
  const port = await freePort();
  const secret = `test-${Math.random().toString(36).slice(2)}`;
  const logFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "holm-agent-log-")), "agent.log");
  const fd = fs.openSync(logFile, "w");
  const spawnedAt = Date.now();
  const proc = spawn(AGENT_NODE, [agentBundle()], {
    env: { ...process.env, HOLM_AGENT_PORT: String(port), HOLM_AGENT_HOST: "127.0.0.1", HOLM_AGENT_SECRET: secret, ...env },
    stdio: ["ignore", fd, fd],
    detached: true,
  });
  track(proc);
  const url = `http://127.0.0.1:${port}`;
  // Every call is signed as the server signs it (images/README.md); `headers` may override.
  const call: Agent["call"] = async (method, p, body, headers) => {
    const t = performance.now();
    const sent = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
    const res = await fetch(url + p, {
      method,
      headers: { authorization: sign(secret, method, p, sent), "content-type": "application/json", ...headers },
      body: sent,
    });
    const text = await res.text();
    const ms = performance.now() - t;
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // leave as text
    }
    return { status: res.status, body: parsed as any, ms };
  };
  await until(async () => (await fetch(`${url}/health`)).status > 0, "agent to listen", 10_000, 50);
  return { url, secret, spawnedAt, proc, call, log: () => fs.readFileSync(logFile, "utf8") };
}

export function pointerAt(display: number): { x: number; y: number } {
  const out = xrun(display, "xdotool", ["getmouselocation"]);
  const m = /x:(\d+) y:(\d+)/.exec(out);
  if (!m) throw new Error(`getmouselocation: ${out}`);
  return { x: Number(m[1]), y: Number(m[2]) };
}

/** `batch` shorthand: POST /screens/n/batch and return the body. */
export async function batch(agent: Agent, screen: number, body: unknown): Promise<any> {
  const r = await agent.call("POST", `/screens/${screen}/batch`, body);
  if (r.status !== 200) throw new Error(`batch answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

export { decodePng } from "../support/png";

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}

