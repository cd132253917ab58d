import type { ErrorCode } from "~/protocol/errors";

// The TypeScript client of the /v1 API (the seeds' Rust `holm-client`). It runs wherever Node or
// a browser runs: the `holm` CLI, the server's MCP tools (which call /v1 with the caller's own
// key, so a tool is authorized, validated and traced exactly as the route is), the tests. It
// imports no server code: request types come from the same zod schemas the routes validate with
// (type-only imports), so a change to a route's schema is a type error here.

/** An error answer of /v1: the seed's `{code, message, retryable}` with the HTTP status. */
export class HolmApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode | string,
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = "HolmApiError";
  }
}

export interface ClientOptions {
  /** The server, e.g. http://127.0.0.1:8080 (HOLM_URL). */
  baseUrl: string;
  /** A server token, workspace token or `holm_sk_` key (HOLM_TOKEN); none in open mode. */
  token?: string;
  /** Another fetch (tests, a proxy). */
  fetch?: typeof fetch;
  /** Headers sent on every request (idempotency keys go per call). */
  headers?: Record<string, string>;
}

export type Query = Record<string, string | number | boolean | undefined | null>;

export interface RequestOptions {
  query?: Query;
  /** A JSON body (serialized here). */
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export class HolmClient {
  readonly baseUrl: string;
  readonly #token?: string;
  readonly #fetch: typeof fetch;
  readonly #headers: Record<string, string>;

  constructor(opts: ClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.#token = opts.token || undefined;
    this.#fetch = opts.fetch ?? fetch;
    this.#headers = opts.headers ?? {};
  }

  /** The full URL of a /v1 path with its query (undefined and null values left out). */
  url(path: string, query?: Query): string {
    const u = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null) u.searchParams.set(k, String(v));
    return u.toString();
  }

  /** Sends a request; answers the raw Response when it is a success, throws HolmApiError otherwise. */
  async raw(method: string, path: string, opts: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { ...this.#headers, ...opts.headers };
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    let body: string | undefined;
    if (opts.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(opts.body);
    }
    const res = await this.#fetch(this.url(path, opts.query), { method, headers, body, signal: opts.signal });
    if (res.ok) return res;
    throw await errorOf(res);
  }

  /** Sends a request and reads its JSON answer. */
  async request<T = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const res = await this.raw(method, path, opts);
    const text = await res.text();
    return (text === "" ? undefined : JSON.parse(text)) as T;
  }
}

/** The seed's error body of a failed answer, or one made from its status when it has none. */
async function errorOf(res: Response): Promise<HolmApiError> {
  const text = await res.text().catch(() => "");
  try {
    const e = JSON.parse(text) as { code?: string; message?: string; retryable?: boolean };
    if (typeof e.code === "string" && typeof e.message === "string") return new HolmApiError(res.status, e.code, e.message, e.retryable === true);
  } catch {
    /* not JSON: below */
  }
  return new HolmApiError(res.status, res.status >= 500 ? "transport" : "bad_request", `HTTP ${res.status}: ${text.slice(0, 200)}`, res.status >= 500);
}

/** Path segment encoding for ids, names and tabs. */
export const seg = (s: string | number) => encodeURIComponent(String(s));
