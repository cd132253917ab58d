import fs from "node:fs";
import os from "node:os";
import path from "node:path";

// "A test greps the log of a full test run for the secrets it used" (issue 19). Every test server
// (tests/support/server.ts) writes its whole output to a file in one directory per run; tests
// register the secrets they hand a server (its token, keys they mint, passwords, sealed secrets,
// text they type) in the same directory; at the end of a run the check reads every log for every
// registered secret (scripts/check-log-secrets.ts, a step of scripts/test.sh, and the integration
// project's global teardown). One found is a failure, with the file, line and what it was.

/** Shorter values are not secrets worth the name, and would match by chance. */
export const MIN_SECRET_LENGTH = 8;

/**
 * A value of fewer distinct characters ("x".repeat(12), a test's filler password) is not told
 * apart from filler text in a log ("xxxx…" typed or sent by a fuzz test), so it is not looked for.
 */
const MIN_DISTINCT_CHARS = 5;

function checkable(value: string | undefined | null): value is string {
  return !!value && value.length >= MIN_SECRET_LENGTH && new Set(value).size >= MIN_DISTINCT_CHARS;
}

const SECRETS_FILE = "secrets.jsonl";

/**
 * The run's directory: HOLM_TEST_LOG_DIR (scripts/test.sh sets one for all its suites), else one
 * per run label under the temporary directory. Made on first use, root-only.
 */
export function logDir(): string {
  const dir = process.env.HOLM_TEST_LOG_DIR ?? path.join(os.tmpdir(), "holm-test-logs", process.env.HOLM_TEST_RUN ?? `t${process.pid}`);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/** A new file for one server's output (appended to by its caller). */
export function serverLogFile(port: number): string {
  return path.join(logDir(), `server-${port}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}.log`);
}

/** Records a secret the run gave a server; `what` says which (it is printed, the value never). */
export function registerSecret(value: string | undefined | null, what: string): void {
  if (!checkable(value)) return;
  // One short line per append: concurrent test processes do not interleave within it.
  fs.appendFileSync(path.join(logDir(), SECRETS_FILE), `${JSON.stringify({ what, value })}\n`, { mode: 0o600 });
}

export interface Finding {
  file: string;
  line: number;
  what: string;
}

/** The registered secrets of a run's directory (deduplicated by value). */
export function readSecrets(dir: string): { what: string; value: string }[] {
  const file = path.join(dir, SECRETS_FILE);
  if (!fs.existsSync(file)) return [];
  const byValue = new Map<string, string>();
  for (const l of fs.readFileSync(file, "utf8").split("\n")) {
    if (!l.trim()) continue;
    try {
      const s = JSON.parse(l) as { what: string; value: string };
      if (checkable(s.value) && !byValue.has(s.value)) byValue.set(s.value, s.what);
    } catch {
      /* a line cut by a crash: nothing to check */
    }
  }
  return [...byValue].map(([value, what]) => ({ what, value }));
}

/**
 * Every place a registered secret appears in a server log of `dir`: as written, and as JSON
 * writes it inside a string (a quote or backslash in it escaped), which is how a JSON log line
 * would carry it.
 */
export function findSecrets(dir: string): Finding[] {
  const secrets = readSecrets(dir).flatMap((s) => {
    const escaped = JSON.stringify(s.value).slice(1, -1);
    return escaped === s.value ? [s] : [s, { what: s.what, value: escaped }];
  });
  if (secrets.length === 0) return [];
  const found: Finding[] = [];
  for (const name of fs.readdirSync(dir).sort()) {
    if (!name.endsWith(".log")) continue;
    const file = path.join(dir, name);
    const text = fs.readFileSync(file, "utf8");
    for (const s of secrets) {
      // One finding per line and secret, however often it appears there.
      let last = 0;
      for (let at = text.indexOf(s.value); at !== -1; at = text.indexOf(s.value, at + s.value.length)) {
        const line = text.slice(0, at).split("\n").length;
        if (line !== last) found.push({ file, line, what: s.what });
        last = line;
      }
    }
  }
  return found;
}

/** What the check prints: one line per finding, never the secret itself. */
export function describeFindings(found: Finding[]): string {
  return found.map((f) => `  ${f.what} in ${f.file}:${f.line}`).join("\n");
}
