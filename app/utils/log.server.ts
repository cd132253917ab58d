import pino, { type Logger } from "pino";

// The server's one logger (pino). JSON lines, one object per event, unless the output is a
// terminal in development (then pino-pretty, for people). Production or a pipe (a process
// manager, journald, the tests) always get JSON: a machine reads those.
//
// What never goes in: secrets, tokens, passwords, typed text and file bytes. Call sites log ids,
// names, counts and messages, never a request body. `redact` below is the backstop for a field
// that slips through with one of the known names: its value is replaced, the line kept.
//
// Read straight from process.env (not env()): the logger must work while env() is still being
// validated, to say what is wrong with it. The schema (env.server.ts) checks the same variables.

const LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LEVELS)[number];

/** Field names whose values are never written: at the top level, and under the parents below. */
export const REDACTED_KEYS = [
  "password",
  "token",
  "secret",
  "secrets",
  "authorization",
  "cookie",
  "set-cookie",
  "api_key",
  "key",
  "value",
  "text",
  "png_base64",
  "data_base64",
  "bytes",
  "body",
  "agent_secret",
  "vnc_password",
  "ca",
  "cert",
] as const;

/** Objects a caller might log whole, whose secret fields are redacted one level down. */
export const REDACTED_PARENTS = ["headers", "step", "data", "file", "secrets", "fields", "input", "request"] as const;

export function redactPaths(keys: readonly string[] = REDACTED_KEYS, parents: readonly string[] = REDACTED_PARENTS): string[] {
  // fast-redact paths: a key with a dash needs brackets.
  const at = (k: string) => (/^[a-z_][a-z0-9_]*$/i.test(k) ? k : `["${k}"]`);
  const join = (prefix: string, k: string) => (at(k).startsWith("[") ? `${prefix}${at(k)}` : `${prefix}.${at(k)}`);
  // Named paths, no wildcard: a wildcard is walked on every line, and cost a request's line
  // 30 µs of CPU (bench observability) where named paths cost nothing measurable.
  return [...keys.map(at), ...parents.flatMap((p) => keys.map((k) => join(p, k)))];
}

export interface LogOptions {
  level?: string;
  /** `json` or `pretty`; by default pretty only on a terminal outside production. */
  format?: string;
  /** Where lines go (tests); stdout by default. */
  destination?: pino.DestinationStream;
}

/** A logger as the server makes it; exported so the tests can make one on a stream of their own. */
export function makeLogger(o: LogOptions = {}): Logger {
  const level = (LEVELS as readonly string[]).includes(o.level ?? "") ? (o.level as LogLevel) : "info";
  const options: pino.LoggerOptions = {
    level,
    base: { pid: process.pid },
    redact: { paths: redactPaths(), censor: "[redacted]" },
    // `err` as pino's standard serializer gives it (type, message, stack), not `{}`.
    serializers: { err: pino.stdSerializers.err },
    // "level":"warn" rather than 40: read by people and by log shippers alike.
    formatters: { level: (label) => ({ level: label }) },
  };
  if (o.destination) return pino(options, o.destination);
  const pretty = o.format === "pretty" || (o.format !== "json" && process.env.NODE_ENV !== "production" && process.stdout.isTTY);
  if (pretty) return pino({ ...options, transport: { target: "pino-pretty", options: { colorize: true, singleLine: true, translateTime: "HH:MM:ss.l", ignore: "pid,hostname" } } });
  // Asynchronous writes (sonic-boom): a request's line costs a buffer append, not a write(2).
  // shutdown() and a fatal exit flush it.
  return pino(options, pino.destination({ dest: 1, sync: false }));
}

/** The server's logger. */
export const log: Logger = makeLogger({ level: process.env.HOLM_LOG_LEVEL, format: process.env.HOLM_LOG_FORMAT });

/** Writes what is buffered, then calls back (before process.exit). */
export function flushLog(): Promise<void> {
  return new Promise((resolve) => log.flush(() => resolve()));
}

/**
 * What the request's line says beyond method, path and status, filled in by whoever knows it:
 * the /v1 wrapper (the route's parameters), authentication (who called, by name). Linked to the
 * web Request the route sees, found again from the node request the HTTP server saw.
 */
export interface RequestNote {
  /** Who called, by name: `key:<name>`, `person:<name>`, `server`, `open`. Never a secret. */
  actor?: string;
  /** The route's path parameters, for the route pattern (values replaced by `:name`). */
  params?: Record<string, string | undefined>;
  /**
   * What a 5xx answer failed on (the error's message): said on the request's own line, which
   * names the route and the box, as well as on the error's line with its stack.
   */
  error?: string;
}

/** An error's message, for a request's log line (RequestNote.error): its own words, cut short. */
export function failureOf(e: unknown): string {
  return String(e instanceof Error ? e.message : e).slice(0, 300);
}

const notes = new WeakMap<object, RequestNote>();

/** Links a note to a request (the node IncomingMessage, or the web Request a route gets). */
export function linkNote(request: object, note: RequestNote): void {
  notes.set(request, note);
}

export function noteOf(request: object): RequestNote | undefined {
  return notes.get(request);
}

/** Records who called, when the request is being logged. */
export function noteActor(request: object, actor: string): void {
  const n = notes.get(request);
  if (n) n.actor = actor;
}
