import { z } from "zod";
import { ApiError, badRequest, errorResponse, isApiError } from "~/utils/api-error.server";
import { preferredWaitMs, withPausedWait } from "~/models/paused-wait.server";
import { maskDeep, maskerFor, mayHold } from "~/models/secret-mask.server";
import { answerTextOf, bodyTextOf, jsonResponse } from "~/utils/http-bodies.server";
import { type RequestNote, failureOf, linkNote } from "~/utils/log.server";
import { validate } from "~/utils/validate.server";
import { rememberPeer } from "./peer.server";

export { validate };

type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
type Args = { request: Request; params: Record<string, string | undefined>; context?: unknown };
type Handler = (args: Args) => Promise<unknown> | unknown;

/**
 * Builds a JSON resource route from one handler per method, so every answer, including a
 * wrong method and a thrown error, has the /v1 error shape. A route module ends with
 *   export const loader = route.loader, action = route.action;
 * (React Router cannot strip a destructured `loader` from the client bundle, and a `handle`
 * export would carry the handlers, and their server imports, into it.) The methods a route
 * serves are on its loader (`loader.methods`): the auth-matrix test reads them there.
 */
export function v1(handlers: Partial<Record<Method, Handler>>) {
  const methods = Object.keys(handlers) as Method[];
  const serve = async (args: Args): Promise<Response> => {
    // The peer address (from server.ts's load context), for open mode's loopback rule.
    const context = args.context as { remoteAddress?: string; note?: RequestNote } | undefined;
    rememberPeer(args.request, context?.remoteAddress);
    // The request's log line (server/request-log.ts): the route's parameters give its pattern,
    // and authentication adds who called to the same note.
    if (context?.note) {
      context.note.params = args.params;
      linkNote(args.request, context.note);
    }
    const method = (args.request.method === "HEAD" ? "GET" : args.request.method) as Method;
    const handler = handlers[method];
    try {
      if (!handler) {
        throw new ApiError("method_not_allowed", `${args.request.method} is not allowed here; use ${methods.join(", ")}`);
      }
      // A caller may bound how long it waits for a paused box (Prefer: wait=N, paused-wait.server.ts).
      const out = await withPausedWait(preferredWaitMs(args.request), () => handler(args));
      return await masked(args, out instanceof Response ? out : jsonResponse(out ?? { ok: true }));
    } catch (e) {
      const res = errorResponse(e);
      if (res.status >= 500 && context?.note) context.note.error = failureOf(e);
      if (res.status === 405) res.headers.set("allow", methods.join(", "));
      return await masked(args, res);
    }
  };
  const run = Object.assign(serve, { methods: methods as readonly Method[] });
  return { loader: run, action: run };
}

/**
 * An answer about a box (a route under /v1/boxes/{id}/, not the box itself) with its workspace's
 * secret values taken out (app/models/secret-mask.server.ts), errors included. Answers that are
 * not JSON text (frames, files as bytes) go as they are.
 */
async function masked(args: Args, res: Response): Promise<Response> {
  const id = args.params.id;
  if (!id) return res;
  const text = answerTextOf(res);
  if (text === undefined || !/^\/v1\/boxes\/[^/]+\/./.test(new URL(args.request.url).pathname)) return res;
  // Fails closed: an answer that cannot be checked is not given.
  const m = await maskerFor(id).catch(() => {
    throw new ApiError("unavailable", "the answer could not be checked for secrets; try again", { retryable: true });
  });
  if (!m || !mayHold(m, text)) return res;
  const body = maskDeep(m, JSON.parse(text));
  const again = JSON.stringify(body);
  return again === text ? res : jsonResponse(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}

/** Reads a body as text. The HTTP edge (server/http-edge.ts) caps it; a cut body is an error here. */
export async function readText(request: Request): Promise<string> {
  const known = bodyTextOf(request);
  if (known !== undefined) return known;
  try {
    return await request.text();
  } catch (e) {
    if (isApiError(e)) throw e;
    throw badRequest("the body could not be read to its end");
  }
}

/** Reads and validates a JSON body. An empty body reads as `{}`. */
export async function parseBody<S extends z.ZodType>(request: Request, schema: S): Promise<z.output<S>> {
  return parseJsonText(await readText(request), schema);
}

/** A route's body when it takes none: no body or `{}`. */
export const NoBody = z.strictObject({});

/**
 * For a route that takes no body: no body or `{}` passes, anything else is a 400 naming the
 * key (a misspelt or misplaced field, as `ttl_secs` sent in the body, is never silently
 * ignored). `hint` says where such fields go instead.
 */
export async function refuseBody(request: Request, hint = "this route takes no body"): Promise<void> {
  try {
    parseJsonText(await readText(request), NoBody);
  } catch (e) {
    if (isApiError(e) && e.code === "bad_request") throw badRequest(`${e.message}; ${hint}`);
    throw e;
  }
}

/** Validates a body already read as text (when the text itself is needed, as for idempotency). */
export function parseJsonText<S extends z.ZodType>(text: string, schema: S): z.output<S> {
  let raw: unknown = {};
  if (text.trim() !== "") {
    try {
      raw = JSON.parse(text);
    } catch (e) {
      throw badRequest(`the body is not valid JSON: ${(e as Error).message}`);
    }
  }
  return validate(schema, raw, "body");
}

/** Validates query parameters (all strings) against a schema that coerces. */
export function parseQuery<S extends z.ZodType>(request: Request, schema: S): z.output<S> {
  const url = new URL(request.url);
  // No prototype, and own keys only: `?__proto__=1` is a key the check refuses (not a prototype
  // set in silence), and `?constructor=1` an unknown key (`in` would find Object's).
  const raw: Record<string, string> = Object.create(null);
  for (const [k, v] of url.searchParams) {
    if (Object.hasOwn(raw, k)) throw badRequest(`query parameter "${k}" is given more than once`);
    raw[k] = v;
  }
  return validate(schema, raw, "query");
}


/** A route's query when it takes none. */
export const NoQuery = z.strictObject({});

/**
 * For a GET route that takes no query parameters: any key is a 400 naming it, as `/v1/events`
 * answers, so that a filter a route does not have (`GET /v1/boxes?label=…`) is never silently
 * ignored and answered with everything. No query, no parse: GET /v1/boxes and /v1/boxes/{id}
 * are on the hot path (server/hot-path.ts).
 */
export function refuseQuery(request: Request): void {
  if (!request.url.includes("?")) return;
  parseQuery(request, NoQuery);
}

/** Reads a path parameter that the route pattern guarantees. */
export function param(args: Args, name: string): string {
  const v = args.params[name];
  if (v === undefined || v === "") throw badRequest(`missing path parameter ${name}`);
  return v;
}
