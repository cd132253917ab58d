import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { ApiError } from "~/utils/api-error.server";
import { env } from "~/utils/env.server";
import { newPageNonce, pagePolicy } from "./page-csp";

// The HTTP edge: what every request, page, /v1 call and socket passes before any route sees it
// (docs/decisions/0005). A browser is the threat here: any page the user visits can send it
// simple requests to 127.0.0.1, and a rebound DNS name can read the answers. So:
//   - Host must be a name this server answers to (DNS rebinding): 421.
//   - /v1 and /mcp (every method) and console changes refuse a cross-site or same-site Origin,
//     `Origin: null` and `Sec-Fetch-Site: cross-site|same-site`: 403 `denied`. No CORS is granted.
//   - /v1 and /mcp bodies must be application/json (a form or text/plain POST needs no preflight):
//     400 `bad_request` (the seed's code for a request that is not valid).
//   - /v1 and /mcp are told as the router reads the path (any case, escapes decoded, dot
//     segments resolved: `isApiPath`); a request target that is not a path (absolute-form) is
//     400 `bad_request`.
//   - A /v1 path that does not decode (`%FF`): 400 `bad_request`, in the /v1 error shape. A request
//     that is not HTTP, or whose line and headers pass Node's limit, gets the same JSON body
//     (431 for the latter) from `answerClientError`, not Node's bare answer.
//   - Bodies are capped while they stream: 413, never buffered whole.

const MiB = 1024 * 1024;
/** /v1 bodies: batches and file writes carry base64 files. */
export const V1_BODY_LIMIT = 96 * MiB;
/** Console forms (log-in, sign-up, settings, box actions). */
export const CONSOLE_BODY_LIMIT = 1 * MiB;

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "[::1]"]);
const SAFE_METHODS = new Set(["GET", "HEAD"]);

interface HostPort {
  name: string;
  port: number | undefined;
}

/** A Host header as `name` (lowercase, IPv6 in brackets) and port; undefined when malformed. */
export function parseHost(value: string | undefined): HostPort | undefined {
  if (!value) return undefined;
  const m = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/i.exec(value);
  if (!m) return undefined;
  return { name: m[1]!.toLowerCase(), port: m[2] === undefined ? undefined : Number(m[2]) };
}

/** An address as it appears in a Host header: IPv4 as is, IPv6 in brackets, v4-mapped unwrapped. */
function asHostName(address: string): string {
  const a = address.toLowerCase().replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, "");
  return a.includes(":") ? `[${a}]` : a;
}

function defaultPort(protocol: string): number {
  return protocol === "https:" ? 443 : 80;
}

let parsedPublic: { from: string | undefined; url: URL | undefined } | undefined;

function publicUrl(): URL | undefined {
  const configured = env().HOLM_PUBLIC_URL;
  if (!parsedPublic || parsedPublic.from !== configured) parsedPublic = { from: configured, url: configured ? new URL(configured) : undefined };
  return parsedPublic.url;
}

/**
 * Whether a Host header names this server: HOLM_PUBLIC_URL's host or a name the administrator
 * listed in HOLM_ADVERTISE_HOSTS (with the public URL's port, or the connection's without one),
 * or, with the port the connection came in on, a loopback name, the configured listen host or
 * the local address the connection reached (an IP literal: a rebinding attack always uses a name).
 */
export function hostAllowed(host: string | undefined, local: { address?: string; port?: number }): boolean {
  const h = parseHost(host);
  if (!h) return false;
  const pub = publicUrl();
  const advertised = env().HOLM_ADVERTISE_HOSTS?.includes(h.name);
  if (pub && (advertised || h.name === pub.hostname.toLowerCase()) && (h.port ?? defaultPort(pub.protocol)) === Number(pub.port || defaultPort(pub.protocol))) {
    return true;
  }
  // Advertised names with no public URL come with the port the connection came in on.
  if (advertised && !pub) return (h.port ?? 80) === local.port;
  if ((h.port ?? 80) !== local.port) return false;
  if (LOOPBACK_NAMES.has(h.name)) return true;
  if (h.name === asHostName(env().HOLM_SERVER_ADDR.host)) return true;
  return local.address !== undefined && h.name === asHostName(local.address);
}

/** Whether an Origin header is this server's own origin (as reached, or HOLM_PUBLIC_URL's). */
export function originAllowed(origin: string, host: string | undefined): boolean {
  if (origin === "null") return false;
  let o: URL;
  try {
    o = new URL(origin);
  } catch {
    return false;
  }
  if (o.protocol !== "http:" && o.protocol !== "https:") return false;
  const pub = publicUrl();
  if (pub && o.origin === pub.origin) return true;
  const h = parseHost(host);
  if (!h) return false;
  const port = Number(o.port || defaultPort(o.protocol));
  return asHostName(o.hostname.replace(/^\[|\]$/g, "")) === h.name && port === (h.port ?? defaultPort(o.protocol));
}

/** Why a request is not from this server's own pages, or undefined when it may be. */
export function crossSiteReason(headers: IncomingMessage["headers"]): string | undefined {
  const site = headers["sec-fetch-site"];
  if (site === "cross-site" || site === "same-site") return `a ${site} request (Sec-Fetch-Site) is refused; this server grants no cross-origin access`;
  const origin = headers.origin;
  if (origin !== undefined && !originAllowed(origin, headers.host)) {
    return origin === "null"
      ? "a request from an opaque origin (Origin: null) is refused"
      : `a request from ${origin} is refused; this server grants no cross-origin access`;
  }
  return undefined;
}

function hostRefusal(host: string | undefined): ApiError {
  const name = host === undefined ? "no Host header" : `Host ${JSON.stringify(host.slice(0, 200))}`;
  return new ApiError("misdirected", `this server does not answer to ${name}; use its address or HOLM_PUBLIC_URL`);
}

function hasBody(req: IncomingMessage): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

function isJson(req: IncomingMessage): boolean {
  const type = req.headers["content-type"];
  return type !== undefined && type.split(";")[0]!.trim().toLowerCase() === "application/json";
}

/** How long a refused upload may go on being read (and dropped) so the client sees the answer. */
// 2 s was too short once: on a loaded CI machine (run 66) a client that was still writing got no
// answer at all; a reset drops whatever the client has not read yet.
const LINGER_MS = 5000;

/**
 * Answers with the error body. When the request's body is left unread (`unread`), the connection
 * ends after the answer: first our side (FIN), then, after LINGER_MS, for good. Closing at once
 * would reset a connection the client is still writing to, and it would lose the answer.
 */
function send(res: ServerResponse, err: ApiError, unread?: IncomingMessage) {
  if (res.headersSent) {
    if (unread) lingerClose(unread);
    return;
  }
  res.statusCode = err.status;
  res.setHeader("content-type", "application/json");
  res.setHeader("cache-control", "no-store");
  if (unread) {
    // Said, not only done: a keep-alive client that is not told sends its next request on this
    // socket as it closes, and that request fails ("other side closed": a CI run's fetch did).
    res.setHeader("connection", "close");
    res.once("finish", () => lingerClose(unread));
  }
  res.end(JSON.stringify(err.toJSON()));
}

function lingerClose(req: IncomingMessage) {
  const socket = req.socket;
  if (socket.destroyed) return;
  socket.end();
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}

function tooLarge(limit: number): ApiError {
  return new ApiError("too_large", `the body is larger than ${limit} bytes`);
}

/**
 * Counts a body without a declared length as it streams; past the limit, the reader (the route)
 * gets an error at once, so it never acts on a cut body, and the client gets 413.
 */
function capStreamingBody(req: IncomingMessage, res: ServerResponse, limit: number) {
  let seen = 0;
  const count = (chunk: Buffer) => {
    seen += chunk.length;
    if (seen <= limit) return;
    req.off("data", count);
    const err = tooLarge(limit);
    // The route's body stream listens for "error" on the request; fail it before any more
    // data or its end can reach it. (Destroying the request would also drop the answer.)
    if (req.listenerCount("error") > 0) req.emit("error", err);
    req.pause();
    send(res, err, req);
  };
  req.on("data", count);
}

/**
 * On every answer. No page of the console may be framed, by anyone: a page on another port of the
 * same host is the same site, gets the session cookie into a frame (SameSite=Lax) and could lay the
 * console under a decoy to take a person's clicks (tests/e2e/security-http). `frame-ancestors` for
 * browsers that read CSP, X-Frame-Options for the rest (a path the edge lets through gets a fuller
 * policy below: /v1's, or a page's script policy). No answer is sniffed into another type:
 * box files and images must never be read as a page of the console's origin.
 */
const EVERY_RESPONSE: [string, string][] = [
  ["x-frame-options", "DENY"],
  ["content-security-policy", "frame-ancestors 'none'"],
  ["x-content-type-options", "nosniff"],
];

/**
 * /v1 and /mcp answer data, never a page: should one of them ever carry bytes a box chose as a
 * page (the DevTools relay once passed on a box's `text/html`: tests/integration/cdp-answer-type),
 * a browser that opens it runs nothing and loads nothing, in an opaque origin without the
 * console's cookies. Defence in depth beside nosniff and the fixed types of those answers.
 */
const API_CSP = "sandbox; default-src 'none'; frame-ancestors 'none'";

/** Express-style middleware for every HTTP request (server.ts installs it before anything else). */
export function httpEdge(req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) {
  for (const [name, value] of EVERY_RESPONSE) res.setHeader(name, value);
  if (!hostAllowed(req.headers.host, { address: req.socket.localAddress, port: req.socket.localPort })) {
    return send(res, hostRefusal(req.headers.host), hasBody(req) ? req : undefined);
  }
  const url = req.url ?? "/";
  // Only origin-form (`GET /path`): absolute-form (`GET http://evil.example/v1/boxes`) names
  // another server, and the router, which glues the Host to the path, failed on it with a 500.
  if (!url.startsWith("/")) {
    return send(res, new ApiError("bad_request", "the request target must be a path (origin-form, starting with /), not a URL"), hasBody(req) ? req : undefined);
  }
  const path = url.split("?")[0]!;
  const v1 = isApiPath(path);
  // A page of the console: only the scripts of the server's own render run (server/page-csp.ts).
  res.setHeader("content-security-policy", v1 ? API_CSP : pagePolicy(newPageNonce(req)));
  if (v1 && !decodes(path)) {
    return send(res, new ApiError("bad_request", "the path holds a malformed percent-escape (% then two hex digits of UTF-8)"), hasBody(req) ? req : undefined);
  }
  if (v1 || !SAFE_METHODS.has(req.method ?? "GET")) {
    const why = crossSiteReason(req.headers);
    if (why) return send(res, new ApiError("forbidden", why), hasBody(req) ? req : undefined);
  }
  if (hasBody(req)) {
    if (v1 && !isJson(req)) {
      const type = req.headers["content-type"];
      const sent = type === undefined ? "no content-type" : `content-type ${JSON.stringify(type.slice(0, 100))}`;
      return send(res, new ApiError("bad_request", `the body was sent with ${sent}; send it as JSON with content-type: application/json`), req);
    }
    const limit = v1 ? V1_BODY_LIMIT : CONSOLE_BODY_LIMIT;
    const declared = req.headers["content-length"];
    if (declared !== undefined && !(Number(declared) <= limit)) return send(res, tooLarge(limit), req);
    if (declared === undefined) capStreamingBody(req, res, limit);
  }
  next();
}

/**
 * Whether a path is /v1 or /mcp as the router will read it: the router resolves `.` and `..`,
 * decodes percent-escapes and matches without regard to case, so `/V1/boxes`, `/%761/boxes` and
 * `/x/../v1/boxes` reach /v1 routes and must meet the /v1 rules (a case-sensitive test on the
 * raw path let them through cross-site). The path is classified, not refused: a client that
 * spells it oddly still gets the /v1 rules and answers, and nothing of the console begins with
 * /v1 or /mcp, so a wider match costs nothing. Repeated slashes are merged (`//v1`) for the same
 * reason. /mcp (MCP over Streamable HTTP, docs/decisions/0013) is the API too: the MCP spec asks
 * the server to check Origin on every request, the SSE GET included.
 */
export function isApiPath(raw: string): boolean {
  let p: string;
  try {
    // As the router's request URL is made (host + path), so dot segments resolve the same way.
    p = new URL(`http://holm${raw}`).pathname;
  } catch {
    p = raw;
  }
  // Only escapes of ASCII are decoded: a prefix test needs no more, and a bad escape (`%FF`) must
  // not hide the prefix from the decode check that follows.
  p = p.replace(/%([0-7][0-9a-f])/gi, (_, h: string) => String.fromCharCode(parseInt(h, 16))).replace(/\/+/g, "/").toLowerCase();
  return p === "/v1" || p.startsWith("/v1/") || p === "/mcp" || p.startsWith("/mcp/");
}

/** Whether a path's percent-escapes decode. (The decoded text is used, so no bundler drops the call.) */
function decodes(path: string): boolean {
  try {
    return typeof decodeURIComponent(path) === "string";
  } catch {
    return false;
  }
}

/**
 * The HTTP server's `clientError` (server/holm.server.ts attaches it): a request Node could not
 * parse. Node's own answer has no body (a 20 kB query string: `431` and nothing to read); this
 * one has the /v1 error body, its status kept (431 for a line and headers over the limit, 408
 * for a request too slow to arrive, else 400).
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex) {
  if (err.code === "ECONNRESET" || !socket.writable) return void socket.destroy();
  const [status, reason, message] =
    err.code === "HPE_HEADER_OVERFLOW"
      ? [431, "Request Header Fields Too Large", "the request line and headers are over the server's limit (16 KiB); send long values in a JSON body"]
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "Request Timeout", "the request did not arrive in time"]
        : [400, "Bad Request", "the request is not valid HTTP"];
  const body = JSON.stringify(new ApiError("bad_request", message).toJSON());
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncache-control: no-store\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/**
 * Why a socket upgrade or socket.io request is refused, or undefined: a foreign Host always;
 * a foreign Origin when `checkOrigin` (socket.io, which authenticates by cookie).
 */
export function socketRefusal(req: IncomingMessage, checkOrigin: boolean): ApiError | undefined {
  if (!hostAllowed(req.headers.host, { address: req.socket.localAddress, port: req.socket.localPort })) return hostRefusal(req.headers.host);
  if (!checkOrigin) return undefined;
  const why = crossSiteReason(req.headers);
  return why ? new ApiError("forbidden", why) : undefined;
}

/** socket.io's `allowRequest`: the same Host and Origin rules as the console's pages. */
export function allowSocketIoRequest(req: IncomingMessage, callback: (err: string | null | undefined, ok: boolean) => void) {
  const refused = socketRefusal(req, true);
  callback(refused ? refused.message : null, !refused);
}
