import { HolmApiError } from "~/client/holm";

// How the CLI talks: results on stdout (a table or a line for people, JSON with --json, one id
// where a script captures it), progress and errors on stderr, errors as `code: message` with a
// non-zero exit.

export interface Out {
  json: boolean;
}

/**
 * Text from a box (page and window titles, commands in the trace, error messages that quote
 * them), made safe for a terminal: every control character (C0, DEL, C1) is shown as an escape
 * (`\x1b`, `\n`) instead of being written. Written raw, `\x1b]0;…\x07` retitles the user's
 * terminal, `\x1b[2J` clears it and `\x1b]52;c;…\x07` writes their clipboard. A newline or tab
 * is escaped too: the CLI prints one table row or trace entry a line.
 */
export function printable(text: string): string {
  return text.replace(/[\x00-\x1f\x7f-\x9f]/g, (c) => {
    const named = NAMED_CONTROLS[c];
    return named ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`;
  });
}
const NAMED_CONTROLS: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/**
 * JSON as JSON.stringify writes it, with DEL and C1 escaped too (`\u009b`): JSON escapes only
 * C0, and a C1 CSI reaches a terminal that reads 8-bit controls. Parses to the same value.
 */
export function jsonText(v: unknown, indent?: number): string {
  return String(JSON.stringify(v, null, indent)).replace(/[\x7f-\x9f]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`);
}

export function printJson(v: unknown) {
  process.stdout.write(`${jsonText(v, 2)}\n`);
}

/** One JSON document per line, for the --follow streams. */
export function printLine(v: unknown) {
  process.stdout.write(`${jsonText(v)}\n`);
}

/** A table with a header row, columns padded to their widest cell; every cell printable. */
export function printTable(head: string[], rows: (string | number | undefined)[][]) {
  const cells = [head, ...rows.map((r) => r.map((c) => (c === undefined ? "" : String(c))))].map((r) => r.map((c) => printable(c)));
  const widths = head.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  for (const r of cells) process.stdout.write(`${r.map((c, i) => (i === r.length - 1 ? c : (c ?? "").padEnd(widths[i]!))).join("  ")}\n`);
}

export const progress = (line: string) => process.stderr.write(`${printable(line)}\n`);

/**
 * A line on stderr that updates in place on a terminal (and is written once otherwise). Nothing
 * is written until `start`: a command that must catch Ctrl-C installs its handler first, since a
 * script (or a test) that interrupts on seeing the line would otherwise kill the process by the
 * signal's default action before the handler is there.
 */
export function ticker(label: string) {
  let started = Date.now();
  const tty = process.stderr.isTTY;
  const draw = () => process.stderr.write(`\r${printable(label)}… ${((Date.now() - started) / 1000).toFixed(0)} s `);
  let timer: ReturnType<typeof setInterval> | undefined;
  return {
    start: () => {
      started = Date.now();
      if (!tty) progress(`${label}…`);
      else {
        timer = setInterval(draw, 1000);
        draw();
      }
    },
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

/** The server the CLI talks to and where its address came from (`--url`, HOLM_URL, the default), for errors about it. */
const server = { url: "http://127.0.0.1:8080", from: "the default; set HOLM_URL or --url", token: false };
export function useServer(url: string, from: string, token = false) {
  server.url = url;
  server.from = from;
  server.token = token;
}

/**
 * The server's 401 speaks to an HTTP caller ("send Authorization: Bearer <…>"); a shell user
 * without HOLM_TOKEN is told to set it, after the server's reason (open mode is over, …).
 */
function forShell(e: HolmApiError): string {
  if (e.code !== "unauthorized" || server.token) return e.message;
  const reason = e.message.replace(/[;:]?\s*send Authorization: Bearer <[^>]*>\s*$/, "");
  return `${reason}; HOLM_TOKEN is not set: set it to a holm_sk_ key from the console's Keys page (or the server token)`;
}

/** An answer that is a web page (a proxy's, another app's, a 404 page): never JSON from holm. */
const HTML = /^\s*<(!doctype|html|head|body)\b/i;

/** `code: message` on stderr, and the exit code. */
export function fail(e: unknown): number {
  if (e instanceof HolmApiError) {
    // The client's message for an answer without holm's error body: `HTTP 404: <the body>`.
    const page = /^HTTP (\d+): ([\s\S]*)$/.exec(e.message);
    if (page && HTML.test(page[2]!)) return notHolm(`answered ${page[1]} with an HTML page`);
    process.stderr.write(`${printable(e.code)}: ${printable(forShell(e))}\n`);
    return 1;
  }
  const err = e as Error & { cause?: { code?: string; message?: string } };
  if (err?.name === "TypeError" && err.message === "fetch failed") {
    process.stderr.write(`transport: could not reach ${printable(server.url)} (${printable(err.cause?.code ?? err.cause?.message ?? "no answer")}); is the server running? (${server.from})\n`);
    return 1;
  }
  if (e instanceof NotJsonAnswer) return notHolm(`answered ${e.status} with ${HTML.test(e.text) ? "an HTML page" : "something that is not JSON"}`);
  process.stderr.write(`bad_request: ${printable(err?.message ?? String(e))}\n`);
  return 1;
}

/** The address reaches a server, but not holm's API (a path after the host, another app). */
function notHolm(what: string): number {
  const name = server.from === "--url" ? "--url" : "HOLM_URL";
  process.stderr.write(`bad_request: the server at ${printable(server.url)} ${what}, not holm's API; is ${name} the holm server's root?\n`);
  return 1;
}

/** A success answer that is not JSON: not holm's API answering (cli/connect.ts). */
export class NotJsonAnswer extends Error {
  constructor(
    readonly status: number,
    readonly text: string,
  ) {
    super(`HTTP ${status}: the answer is not JSON`);
  }
}

/** A usage error the CLI finds itself (before any request), in the same `code: message` form. */
export class UsageError extends HolmApiError {
  constructor(message: string) {
    super(400, "bad_request", message, false);
  }
}
