import { HolmApiError } from "~/client/holm";

// How the CLI talks: results on stdout (a table or a line for people, JSON with --json, one id
// where a script captures it), progress and errors on stderr, errors as `code: message` with a
// non-zero exit.

export interface Out {
  json: boolean;
}

export function printJson(v: unknown) {
  process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);
}

/** One JSON document per line, for the --follow streams. */
export function printLine(v: unknown) {
  process.stdout.write(`${JSON.stringify(v)}\n`);
}

/** A table with a header row, columns padded to their widest cell. */
export function printTable(head: string[], rows: (string | number | undefined)[][]) {
  const cells = [head, ...rows.map((r) => r.map((c) => (c === undefined ? "" : String(c))))];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  for (const r of cells) process.stdout.write(`${r.map((c, i) => (i === r.length - 1 ? c : (c ?? "").padEnd(widths[i]!))).join("  ")}\n`);
}

export const progress = (line: string) => process.stderr.write(`${line}\n`);

/** A line on stderr that updates in place on a terminal (and is written once otherwise). */
export function ticker(label: string) {
  const started = Date.now();
  const tty = process.stderr.isTTY;
  if (!tty) progress(`${label}…`);
  const draw = () => process.stderr.write(`\r${label}… ${((Date.now() - started) / 1000).toFixed(0)} s `);
  const timer = tty ? setInterval(draw, 1000) : undefined;
  if (tty) draw();
  return {
    update: (next: string) => {
      if (next === label) return;
      label = next;
      if (tty) draw();
      else progress(`${label}…`);
    },
    done: (line: string) => {
      if (timer) clearInterval(timer);
      if (tty) process.stderr.write("\r\x1b[K");
      progress(`${line} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    },
    stop: () => {
      if (timer) clearInterval(timer);
      if (tty) process.stderr.write("\n");
    },
  };
}

export const when = (ms: number | null | undefined) => (ms ? new Date(ms).toISOString().replace("T", " ").slice(0, 19) : "");

/** `code: message` on stderr, and the exit code. */
export function fail(e: unknown): number {
  if (e instanceof HolmApiError) {
    process.stderr.write(`${e.code}: ${e.message}\n`);
    return 1;
  }
  const err = e as Error & { cause?: { code?: string; message?: string } };
  if (err?.name === "TypeError" && err.message === "fetch failed") {
    const url = process.env.HOLM_URL || "http://127.0.0.1:8080";
    process.stderr.write(`transport: could not reach ${url} (${err.cause?.code ?? err.cause?.message ?? "no answer"}); is the server running? (HOLM_URL)\n`);
    return 1;
  }
  process.stderr.write(`bad_request: ${err?.message ?? String(e)}\n`);
  return 1;
}

/** A usage error the CLI finds itself (before any request), in the same `code: message` form. */
export class UsageError extends HolmApiError {
  constructor(message: string) {
    super(400, "bad_request", message, false);
  }
}
