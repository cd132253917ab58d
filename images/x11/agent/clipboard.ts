// Clipboard through xclip (X11) or wl-clipboard (a Wayland screen, named `wayland:<n>`): owning a
// selection means answering other clients' requests for as long as the text should stay, which
// xclip's (or wl-copy's) background child does for us.
import { spawn } from "node:child_process";
import { childEnv, runTool } from "./proc";
import { AgentError } from "./errors";

export type Selection = "clipboard" | "primary";

const onWayland = (display: string): boolean => display.startsWith("wayland:");

/** The tool and its arguments: read (`out`) or take the text on stdin. */
function tool(display: string, selection: Selection, out: boolean): [string, string[]] {
  if (!onWayland(display)) return ["xclip", ["-selection", selection, out ? "-o" : "-i"]];
  const primary = selection === "primary" ? ["--primary"] : [];
  return out ? ["wl-paste", ["--no-newline", ...primary]] : ["wl-copy", primary];
}

export async function readClipboard(display: string, selection: Selection): Promise<{ selection: Selection; text: string }> {
  const [file, args] = tool(display, selection, true);
  const r = await runTool(file, args, { display, timeoutMs: 3000 });
  // No owner, or an owner without text: xclip exits 1. Both read as empty.
  if (r.code !== 0) return { selection, text: "" };
  return { selection, text: r.stdout.toString("utf8") };
}

export async function writeClipboard(display: string, selection: Selection, text: string): Promise<{ selection: Selection; bytes: number }> {
  const r = await startOwner(display, selection, text);
  // xclip's parent exits once its child is forked, and the child takes the selection when it
  // first talks to the X server: a read at once could still reach the old owner. The write is
  // done when a reader gets the text back.
  const deadline = Date.now() + 2000;
  while (text !== "" && (await readClipboard(display, selection)).text !== text) {
    if (Date.now() > deadline) throw new AgentError("timeout", "xclip did not serve the text within 2000 ms");
    await new Promise((res) => setTimeout(res, 10));
  }
  return r;
}

function startOwner(display: string, selection: Selection, text: string): Promise<{ selection: Selection; bytes: number }> {
  return new Promise((resolve, reject) => {
    // stdout/stderr ignored: xclip's child keeps serving the selection and would hold a pipe open.
    const [file, args] = tool(display, selection, false);
    const child = spawn(file, args, { env: childEnv(display), stdio: ["pipe", "ignore", "ignore"] });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new AgentError("timeout", "xclip did not take the text within 3000 ms"));
    }, 3000);
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
