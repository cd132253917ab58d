// Clipboard through xclip (X11) or wl-clipboard (a Wayland screen, named `wayland:<n>`): owning a
// selection means answering other clients' requests for as long as the text should stay, which
// xclip's (or wl-copy's) background child does for us.
import { spawn } from "node:child_process";
import { ToolOutputTooLarge, childEnv, runTool } from "./proc";
import { AgentError } from "./errors";

export type Selection = "clipboard" | "primary";

const onWayland = (display: string): boolean => display.startsWith("wayland:");

/** The tool and its arguments: read (`out`) or take the text on stdin. */
function tool(display: string, selection: Selection, out: boolean): [string, string[]] {
  if (!onWayland(display)) return ["xclip", ["-selection", selection, out ? "-o" : "-i"]];
  const primary = selection === "primary" ? ["--primary"] : [];
  return out ? ["wl-paste", ["--no-newline", ...primary]] : ["wl-copy", primary];
}

/**
 * The most text a read takes: what the server takes of an agent's answer (8 MiB,
 * AGENT_ANSWER_MAX). Whoever owns the selection says how much there is; more is refused.
 */
const READ_MAX = 8 * 1024 * 1024;

export async function readClipboard(display: string, selection: Selection): Promise<{ selection: Selection; text: string }> {
  const [file, args] = tool(display, selection, true);
  const r = await runTool(file, args, { display, timeoutMs: 5000, maxOutput: READ_MAX }).catch((err: unknown) => {
    if (!(err instanceof ToolOutputTooLarge)) throw err;
    const name = selection === "clipboard" ? "clipboard" : "primary selection";
    throw new AgentError("failed", `the ${name} holds more than ${READ_MAX} bytes of text, more than a read takes; a command can save it to a file (xclip -o)`);
  });
  // No owner, or an owner without text: xclip exits 1. Both read as empty.
  if (r.code !== 0) return { selection, text: "" };
  return { selection, text: r.stdout.toString("utf8") };
}

export async function writeClipboard(display: string, selection: Selection, text: string): Promise<{ selection: Selection; bytes: number }> {
  const r = await startOwner(display, selection, text);
  // xclip's parent exits once its child is forked, and the child takes the selection when it
  // first talks to the X server: a read at once could still reach the old owner. The write is
  // done when a reader gets the text back. On a loaded box each tool takes a second or more to
  // start (a CI run: 3.7 s for wl-copy, then no answer within 2 s), hence the long deadlines.
  const deadline = Date.now() + SERVE_WITHIN_MS;
  while (text !== "" && (await readClipboard(display, selection)).text !== text) {
    if (Date.now() > deadline) throw new AgentError("timeout", `${tool(display, selection, false)[0]} did not serve the text within ${SERVE_WITHIN_MS} ms`);
    await new Promise((res) => setTimeout(res, 20));
  }
  return r;
}

/** How long the owner may take to start, and then to answer a reader with the new text. */
const TAKE_WITHIN_MS = 10_000;
const SERVE_WITHIN_MS = 10_000;

function startOwner(display: string, selection: Selection, text: string): Promise<{ selection: Selection; bytes: number }> {
  return new Promise((resolve, reject) => {
    // stdout/stderr ignored: xclip's child keeps serving the selection and would hold a pipe open.
    const [file, args] = tool(display, selection, false);
    const child = spawn(file, args, { env: childEnv(display), stdio: ["pipe", "ignore", "ignore"] });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new AgentError("timeout", `${file} did not take the text within ${TAKE_WITHIN_MS} ms`));
    }, TAKE_WITHIN_MS);
    child.on("error", (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(e.code === "ENOENT" ? new AgentError("unsupported", `${file} is not installed in this box`) : e);
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve({ selection, bytes: Buffer.byteLength(text) });
      else reject(new AgentError("failed", `${file} exited ${code}`));
    });
    child.stdin.on("error", () => undefined);
    child.stdin.end(text, "utf8");
  });
}
