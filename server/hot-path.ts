import type { IncomingMessage, ServerResponse } from "node:http";
import * as boxRoute from "~/routes/v1/box";
import * as boxesRoute from "~/routes/v1/boxes";
import * as actionsRoute from "~/routes/v1/screen-actions";
import * as frameRoute from "~/routes/v1/screen-frame";
import { badRequest, errorResponse, isApiError } from "~/utils/api-error.server";
import { answerTextOf, withBodyText } from "~/utils/http-bodies.server";
import { log, noteOf } from "~/utils/log.server";

// The hot /v1 routes, served in front of React Router (docs/decisions/0015-hot-path.md): a batch,
// a frame, a box and the box list. Profiled on a one-click batch, React Router's request handler,
// the express adapter's Request (headers copied, an AbortController, the body as a web stream)
// and its streamed answer were about two thirds of the server's own time; the route's own work
// (auth, zod, the trace) the rest. Here the same route module's handler runs (the v1() wrapper:
// auth, errors, unknown-key refusal, idempotency and trace are the route's, unchanged) with a
// Request built from the body already read, and its answer is written in one piece. Anything
// else, and any method these routes do not list here, goes on to React Router as before.

type Serve = (args: { request: Request; params: Record<string, string>; context: unknown }) => Promise<Response>;

interface Hot {
  method: string;
  pattern: RegExp;
  names: string[];
  serve: Serve;
}

const SEG = "([^/]+)";
const hot: Hot[] = [
  { method: "POST", pattern: new RegExp(`^/v1/boxes/${SEG}/screens/${SEG}/actions/?$`), names: ["id", "screen"], serve: actionsRoute.action as Serve },
  { method: "GET", pattern: new RegExp(`^/v1/boxes/${SEG}/screens/${SEG}/frame/?$`), names: ["id", "screen"], serve: frameRoute.loader as Serve },
  { method: "GET", pattern: new RegExp(`^/v1/boxes/${SEG}/?$`), names: ["id"], serve: boxRoute.loader as Serve },
  { method: "GET", pattern: /^\/v1\/boxes\/?$/, names: [], serve: boxesRoute.loader as Serve },
];

/** Path parameters as React Router gives them: decoded; undefined when one does not decode. */
function paramsOf(m: RegExpExecArray, names: string[]): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  try {
    names.forEach((n, i) => (out[n] = decodeURIComponent(m[i + 1]!)));
  } catch {
    return undefined;
  }
  return out;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.once("end", () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    // The HTTP edge fails the request with `too_large` when a streamed body passes its limit.
    req.once("error", reject);
    req.once("aborted", () => reject(badRequest("the body could not be read to its end")));
  });
}

/** The URL React Router's express adapter would build (server.ts sets `trust proxy` for HOLM_PUBLIC_URL). */
function urlOf(req: IncomingMessage & { protocol?: string; hostname?: string; originalUrl?: string; get?: (h: string) => string | undefined; app?: { enabled(s: string): boolean } }): string {
  const forwarded = req.app?.enabled("trust proxy") ? req.get?.("X-Forwarded-Host")?.split(":")[1] : undefined;
  const hostPort = req.headers.host?.split(":")[1];
  const port = [forwarded, hostPort].map((p) => Number.parseInt(p ?? "", 10)).find((p) => Number.isSafeInteger(p));
  const hostname = (req.hostname ?? "").split(/[\\/?#@]/)[0] || "localhost";
  return `${req.protocol ?? "http"}://${hostname}${port ? `:${port}` : ""}${req.originalUrl ?? req.url ?? "/"}`;
}

async function send(res: ServerResponse, response: Response, t0?: number) {
  const text = answerTextOf(response);
  const body = text !== undefined ? Buffer.from(text) : Buffer.from(await response.arrayBuffer());
  if (res.destroyed || res.writableEnded) return;
  res.statusCode = response.status;
  for (const [k, v] of response.headers) res.appendHeader(k, v);
  // The server's whole time on the request, beside the route's own `box` and `trace`: what a
  // client measures beyond it is its own and the network's.
  if (t0 !== undefined) res.appendHeader("server-timing", `app;dur=${(performance.now() - t0).toFixed(2)}`);
  res.setHeader("content-length", body.length);
  res.end(body);
}

/** Express middleware (server.ts, after the HTTP edge): serves the hot routes, passes the rest on. */
export function hotPath(req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) {
  const method = req.method ?? "GET";
  const path = (req.url ?? "/").split("?")[0]!;
  if (!path.startsWith("/v1/boxes")) return next();
  let found: { h: Hot; params: Record<string, string> } | undefined;
  for (const h of hot) {
    if (h.method !== method) continue;
    const m = h.pattern.exec(path);
    if (!m) continue;
    const params = paramsOf(m, h.names);
    if (!params) return next();
    found = { h, params };
    break;
  }
  if (!found) return next();
  const { h, params } = found;
  const t0 = performance.now();
  void (async () => {
    // As the adapter does: the request's signal aborts when the client goes before the answer.
    const controller = new AbortController();
    res.once("close", () => {
      if (!res.writableFinished) controller.abort();
    });
    let body: Buffer | undefined;
    if (method !== "GET") {
      try {
        body = await readBody(req);
      } catch (e) {
        return send(res, errorResponse(isApiError(e) ? e : badRequest("the body could not be read to its end")));
      }
    }
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (v === undefined) continue;
      if (Array.isArray(v)) for (const one of v) headers.append(k, one);
      else headers.set(k, v);
    }
    // The body goes to the route as the text it is (http-bodies.server.ts), decoded as
    // Request.text() would (UTF-8, a leading BOM dropped, bad bytes replaced).
    // The signal is this controller's, set on the Request itself: undici follows a signal given to
    // the constructor with listeners and a weak reference, 125 µs a Request against 80 without,
    // in calls 5 ms apart (Node 20). Routes read `request.signal`; nothing here hands the Request
    // to fetch, which would read its own.
    const request = new Request(urlOf(req), { method, headers });
    Object.defineProperty(request, "signal", { value: controller.signal });
    if (body !== undefined) withBodyText(request, new TextDecoder().decode(body));
    // The peer as server.ts's handler gives it: express's `req.ip` (X-Forwarded-For from a
    // trusted loopback proxy only), else the socket's.
    const peer = (req as { ip?: string }).ip ?? req.socket.remoteAddress ?? "unknown";
    const response = await h.serve({ request, params, context: { remoteAddress: peer, note: noteOf(req) } });
    await send(res, response, t0);
  })().catch((e) => {
    log.error({ err: e }, "hot path failed");
    // A store or Redis outage answers 503 `unavailable`; anything else 500 `internal`.
    if (!res.headersSent) void send(res, errorResponse(e));
    else res.destroy();
  });
}
