import { spawn } from "node:child_process";
import path from "node:path";
import { ROOT } from "./server";

// The built operator CLI (build/cli/holm.js: `holm backup`, `restore`, `doctor`) run as a real
// process on this machine, reading only the settings a test names (no /etc/holm/holm.env).

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `holm ARGS`. `mount` = [source, target]: the CLI alone sees `source` bind-mounted on
 * `target` (a mount namespace of its own, root), as a directory on another disk would be.
 */
export function holmCli(cwd: string, args: string[], extra: Record<string, string> = {}, mount?: [string, string]): Promise<Ran> {
  const cli = [process.execPath, path.join(ROOT, "build/cli/holm.js"), ...args];
  const [cmd, argv] = mount ? ["unshare", ["-m", "sh", "-c", 'mount --bind "$1" "$2" && shift 2 && exec "$@"', "sh", ...mount, ...cli]] : [cli[0]!, cli.slice(1)];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, {
      cwd,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/root", HOLM_CONFIG_FILE: "none", HOLM_STORAGE_BACKEND: "local", HOLM_ROOT: ROOT, ...extra },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}
