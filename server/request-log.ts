import type { IncomingMessage, ServerResponse } from "node:http";
import { env } from "~/utils/env.server";
import { type RequestNote, linkNote, log, noteOf } from "~/utils/log.server";

// One log line per HTTP request, written when the answer is done (or the client went): method,
// route pattern, status, duration, who called (by name) and the box. First middleware in
// server.ts, so the HTTP edge's own refusals (421, 403, 413) are lines too. Socket.io and
// WebSocket upgrades are not requests of the express app; their sockets log themselves.
//
// Cheap on the hot path (ADR 0015): a note object and a close listener per request; the route
// pattern is worked out once the answer has gone; no header, query or body is read. Query strings
// are never logged (a CDP address carries its token in the path, which the pattern replaces).

/** A path segment that may be an id or a token: digits, 8 or more with a digit, or 16 or more. */
const ID_LIKE = /^(\d+|[A-Za-z0-9_.~%-]{16,}|(?=[^/]*\d)[A-Za-z0-9_.~%-]{8,})$/;

/**
 * The route pattern of a path: each path parameter's value replaced by `:name` (in order, as the
 * route declares them), a splat by `*`. Without parameters (a console page, a refusal before any
 * route), segments that look like ids become `:id`.
 */
export function routePattern(path: string, params?: Record<string, string | undefined>): string {
  if (path.startsWith("/assets/")) return "/assets/*";
  const segs = path.split("/");
  if (params) {
    let from = 1;
    for (const [name, value] of Object.entries(params)) {
      if (value === undefined) continue;
      if (name === "*") {
        // The splat is the rest of the path.
        const at = segs.length - value.split("/").length;
        if (at >= from) segs.splice(at, segs.length - at, "*");
        continue;
      }
      for (let i = from; i < segs.length; i++) {
        if (segs[i] === value || safeDecode(segs[i]!) === value) {
          segs[i] = `:${name}`;
          from = i + 1;
          break;
        }
      }
    }
    return segs.join("/");
  }
  return segs.map((s) => (ID_LIKE.test(s) ? ":id" : s)).join("/");
}

function safeDecode(s: string): string | undefined {
  try {
    return decodeURIComponent(s);
  } catch {
    return undefined;
  }
}

const BOX_PATH = /^\/(?:v1\/)?boxes\/([^/]+)/;

/** The box a path is about (`/v1/boxes/{id}…`, `/boxes/{id}…`), if any. */
function boxOf(path: string, params?: Record<string, string | undefined>): string | undefined {
  if (params?.id !== undefined && BOX_PATH.test(path)) return params.id;
  const m = BOX_PATH.exec(path);
  return m && m[1] !== "thumbs" ? safeDecode(m[1]!) : undefined;
}

function write(req: IncomingMessage, res: ServerResponse, t0: number, note: RequestNote) {
  const path = (req.url ?? "/").split("?")[0]!;
  const line = {
    method: req.method,
    route: routePattern(path, note.params),
    status: res.statusCode,
    ms: Math.round((performance.now() - t0) * 100) / 100,
    actor: note.actor,
    box: boxOf(path, note.params),
    error: note.error,
    // The client went before the whole answer was written.
    aborted: res.writableFinished ? undefined : true,
  };
  if (line.status >= 500) log.warn(line, "request");
  else log.info(line, "request");
}

let enabled: boolean | undefined;

/** Express middleware: the request's line, when the answer ends. `HOLM_LOG_REQUESTS=0` turns it off. */
export function requestLog(req: IncomingMessage, res: ServerResponse, next: () => void) {
  enabled ??= env().HOLM_LOG_REQUESTS;
  if (!enabled) return next();
  const t0 = performance.now();
  const note: RequestNote = {};
  linkNote(req, note);
  res.once("close", () => write(req, res, t0, note));
  next();
}

/** The note of a node request (for the load context: routes link it to their web Request). */
export function requestNote(req: IncomingMessage): RequestNote | undefined {
  return noteOf(req);
}
