import fs from "node:fs";
import { parseEnv as parseDotenv } from "node:util";

// Configuration from a file as well as the environment (issue 19): an operator keeps the
// settings in /etc/holm/holm.env (dotenv format, the file systemd's EnvironmentFile= reads too),
// or the file HOLM_CONFIG_FILE names. The environment wins over the file, so a one-off
// `HOLM_SERVER_ADDR=… npm start` still works and systemd's own copy of the values agrees.
// Node's own parser (util.parseEnv, Node ≥ 20.12) rather than the dotenv package: same format,
// no dependency.

export const DEFAULT_CONFIG_FILE = "/etc/holm/holm.env";

export interface ConfigFileResult {
  /** The file read, or undefined when there was none to read. */
  file?: string;
  /** Variables taken from the file (the environment had none of them). */
  applied: string[];
  /** Variables of the file the environment already set: the environment's value was kept. */
  overridden: string[];
  /** Why a default file that exists was not read (permissions: systemd already passed its values). */
  skipped?: string;
}

/**
 * Reads the configuration file into `target` (process.env by default) for every variable
 * `target` does not set. HOLM_CONFIG_FILE names the file; unset, /etc/holm/holm.env is read if
 * it exists; set to "" (or `none`), no file is read. A named file that cannot be read is an
 * error (the operator asked for it); the default file that cannot be read (mode 0600 root under
 * a service user whose systemd unit already loaded it) is skipped with the reason.
 */
export function loadConfigFile(target: NodeJS.ProcessEnv = process.env): ConfigFileResult {
  const named = target.HOLM_CONFIG_FILE;
  if (named === "" || named === "none") return { applied: [], overridden: [] };
  const file = named ?? DEFAULT_CONFIG_FILE;
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (named !== undefined) throw new Error(`HOLM_CONFIG_FILE: cannot read ${file} (${code ?? (err as Error).message})`);
    if (code === "ENOENT") return { applied: [], overridden: [] };
    return { applied: [], overridden: [], skipped: `${file}: ${code ?? (err as Error).message}` };
  }
  const applied: string[] = [];
  const overridden: string[] = [];
  for (const [k, v] of Object.entries(parseDotenv(text))) {
    if (v === undefined) continue;
    if (target[k] !== undefined) overridden.push(k);
    else {
      target[k] = v;
      applied.push(k);
    }
  }
  return { file, applied, overridden };
}
