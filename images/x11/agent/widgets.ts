// Native widgets (seed 000 "Native widgets"): `on_node` steps, answered by AT-SPI through
// pyatspi in a helper the agent starts once and keeps (images/x11/atspi/widgets.py). Python,
// because Debian's maintained AT-SPI binding is; one long-lived process, because starting
// Python and pyatspi costs about 150 ms, a request about 5.
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { AgentError, type ErrorCode } from "./errors";

export const WIDGETS_HELPER = "/opt/holm/atspi/widgets.py";
/** A walk of a big tree can be slow; past this the helper is stopped and started anew. */
const REQUEST_TIMEOUT_MS = 15_000;
const CODES: ReadonlySet<string> = new Set<ErrorCode>(["bad_request", "unsupported", "not_found", "failed"]);

interface Pending {
  resolve: (v: Record<string, unknown>) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

let helper: { child: ChildProcess; pending: Map<number, Pending> } | undefined;
let nextId = 1;

function start(): NonNullable<typeof helper> {
  // The session bus the agent inherited from the entrypoint leads to the accessibility bus.
  const child = spawn("python3", ["-u", WIDGETS_HELPER], { stdio: ["pipe", "pipe", "pipe"] });
  const h = { child, pending: new Map<number, Pending>() };
  const stderr: string[] = [];
  child.stderr!.setEncoding("utf8").on("data", (d: string) => {
    stderr.push(d);
    if (stderr.length > 20) stderr.shift();
  });
  createInterface({ input: child.stdout! }).on("line", (line) => {
    let msg: { id?: number; ok?: boolean; result?: Record<string, unknown>; code?: string; message?: string };
    try {
      msg = JSON.parse(line);
    } catch {
      return;
    }
    const p = msg.id === undefined ? undefined : h.pending.get(msg.id);
    if (!p) return;
    h.pending.delete(msg.id!);
    clearTimeout(p.timer);
    if (msg.ok) p.resolve(msg.result ?? {});
    else p.reject(new AgentError(CODES.has(msg.code ?? "") ? (msg.code as ErrorCode) : "failed", msg.message ?? "AT-SPI failed"));
  });
  const gone = (why: string) => {
    if (helper === h) helper = undefined;
    for (const p of h.pending.values()) {
      clearTimeout(p.timer);
      p.reject(new AgentError("failed", why));
    }
    h.pending.clear();
  };
  child.on("error", (e) => gone(`the AT-SPI helper could not start: ${e.message}`));
  child.on("exit", (code) => gone(`the AT-SPI helper stopped (${code ?? "signal"}): ${stderr.join("").trim().split("\n").at(-1) ?? ""}`));
  child.stdin!.on("error", () => undefined);
  return h;
}

/** Whether this box was built with AT-SPI (its spec's `accessibility` feature). */
export function hasAccessibility(features = process.env.HOLM_FEATURES ?? ""): boolean {
  return features.split(",").includes("accessibility");
}

/** Runs one widget operation (`what` of `on_node`, already checked by the schema). */
export function widgetOp(what: Record<string, unknown>): Promise<Record<string, unknown>> {
  if (!hasAccessibility()) {
    return Promise.reject(new AgentError("unsupported", "native widgets need a box with the `accessibility` feature (spec.desktop.features)"));
  }
  const h = (helper ??= start());
  const id = nextId++;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      h.pending.delete(id);
      reject(new AgentError("timeout", `the widget operation ${String(what.op)} did not finish in ${REQUEST_TIMEOUT_MS / 1000} s`));
      // Its answer may still come, to nobody: start afresh rather than read it as the next one's.
      h.child.kill("SIGKILL");
    }, REQUEST_TIMEOUT_MS);
    h.pending.set(id, { resolve, reject, timer });
    h.child.stdin!.write(`${JSON.stringify({ ...what, id })}\n`);
  });
}
