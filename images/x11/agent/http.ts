// The agent's HTTP surface. JSON in, JSON out; every error is {code, message} with the status
// the server's error table gives that code. Nothing thrown in a handler reaches the process.
import http from "node:http";
import crypto from "node:crypto";
import type { Duplex } from "node:stream";
import type { Screen } from "./screen";
import type { AgentConfig } from "./config";
import { AgentError, HTTP_STATUS, describeError } from "./errors";
import { runBatch } from "./batch";
import { runStep } from "./steps";
import { StepSchema, ClipboardSetSchema, ArrangeSchema, CaptureSchema, describeIssues, type Step } from "./schema";
import { captureFrame } from "./frames";
import { health } from "./health";
import { EMPTY_BODY_SHA256, Verifier, bodyMatches } from "./auth";
import { cdpTarget, proxyCdpHttp, proxyCdpUpgrade, refuseUpgrade } from "./cdp-proxy";
import type { DirectViewers } from "./viewer";
import { AGENT_ROUTES, type AgentRoute } from "../../../app/protocol/agent";

/** Room for a 64 MB file as base64 (~86 MB) plus JSON. */
const MAX_BODY = 100 * 1024 * 1024;

type Params = Record<string, string>;
interface Ctx {
  req: http.IncomingMessage;
  url: URL;
  params: Params;
  /** The JSON body (read and checked against its signature before the handler runs). */
  body: () => Promise<unknown>;
}
type Handler = (ctx: Ctx) => Promise<unknown>;
interface Route {
  method: string;
  parts: string[];
  auth: boolean;
  handler: Handler;
}

/** The whole body and its SHA-256 (hex), hashed as it streams in. */
function readRaw(req: http.IncomingMessage): Promise<{ data: Buffer; sha256: string }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const hash = crypto.createHash("sha256");
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new AgentError("bad_request", `body is larger than ${MAX_BODY} bytes`));
        req.destroy();
        return;
      }
      hash.update(c);
      chunks.push(c);
    });
    req.on("error", reject);
    req.on("end", () => resolve({ data: Buffer.concat(chunks), sha256: hash.digest("hex") }));
  });
}

function parseJson(data: Buffer): unknown {
  if (data.length === 0) return {};
  try {
    return JSON.parse(data.toString("utf8"));
  } catch {
    throw new AgentError("bad_request", "body is not valid JSON");
  }
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const data = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { "content-type": "application/json", "content-length": data.length, "cache-control": "no-store" });
  res.end(data);
}

function step(raw: Record<string, unknown>): Step {
  const r = StepSchema.safeParse(raw);
  if (!r.success) throw new AgentError("bad_request", describeIssues(r.error));
  return r.data;
}

const num = (v: string | null): number | undefined => {
  if (v === null || v === "") return undefined;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new AgentError("bad_request", `"${v}" is not a number`);
  return n;
};

export function createServer(screens: Screen[], config: AgentConfig, viewers?: DirectViewers): http.Server {
  const routes: Route[] = [];
  // Every route is one of AGENT_ROUTES (app/protocol/agent.ts), where the server builds its paths.
  const add = (name: AgentRoute, handler: Handler, auth = true): void => {
    const [method, pattern] = AGENT_ROUTES[name];
    routes.push({ method, parts: pattern.split("/").filter(Boolean), auth, handler });
  };
  const screenOf = (p: Params): Screen => {
    const n = Number(p.n);
    const s = Number.isInteger(n) ? screens[n] : undefined;
    if (!s) throw new AgentError("not_found", `no screen ${p.n}; this box has ${screens.length}`);
    return s;
  };
  /** Input-changing single routes wait their turn behind a running batch. */
  const locked = (s: Screen, st: Step) => s.lock.run(() => runStep(s, st));

  add("health", async () => health(screens), false);

  const anyGuarded = () => screens.some((s) => Date.now() < s.guardedUntil);
  add("batch", async ({ params, body }) => runBatch(screenOf(params), await body(), anyGuarded));

  add("frame", async ({ params, url }) => {
    const q = url.searchParams;
    const x = num(q.get("x"));
    const y = num(q.get("y"));
    const width = num(q.get("width"));
    const height = num(q.get("height"));
    const anyRegion = [x, y, width, height].some((v) => v !== undefined);
    const opts = CaptureSchema.safeParse({
      window: q.get("window") ?? undefined,
      region: anyRegion ? { x: x ?? 0, y: y ?? 0, width, height } : undefined,
      scale: num(q.get("scale")),
      pointer: q.get("pointer") === "1" || q.get("pointer") === "true" ? true : undefined,
    });
    if (!opts.success) throw new AgentError("bad_request", describeIssues(opts.error));
    return captureFrame(screenOf(params), opts.data, q.get("have") ?? undefined);
  });

  add("cursor", async ({ params }) => runStep(screenOf(params), step({ type: "cursor" })));

  add("clipboardRead", async ({ params, url }) =>
    runStep(screenOf(params), step({ type: "clipboard", selection: url.searchParams.get("selection") ?? undefined })),
  );
  add("clipboardWrite", async ({ params, body }) => {
    const b = ClipboardSetSchema.safeParse(await body());
    if (!b.success) throw new AgentError("bad_request", describeIssues(b.error));
    return runStep(screenOf(params), step({ type: "clipboard", selection: b.data.selection, text: b.data.text }));
  });

  add("windows", async ({ params }) => runStep(screenOf(params), step({ type: "windows" })));
  add("windowActive", async ({ params }) => runStep(screenOf(params), step({ type: "windows", active: true })));
  add("windowWait", async ({ params, body }) =>
    runStep(screenOf(params), step({ type: "await_window", what: (await body()) as Record<string, unknown> })),
  );
  add("windowFocus", async ({ params }) =>
    locked(screenOf(params), step({ type: "on_window", window: params.w, what: { do: "focus" } })),
  );
  add("windowArrange", async ({ params, body }) => {
    const how = ArrangeSchema.safeParse(await body());
    if (!how.success) throw new AgentError("bad_request", describeIssues(how.error));
    return locked(screenOf(params), step({ type: "on_window", window: params.w, what: { do: "arrange", ...how.data } }));
  });
  add("windowClose", async ({ params }) =>
    locked(screenOf(params), step({ type: "on_window", window: params.w, what: { do: "close" } })),
  );

  add("tabs", async ({ params }) => runStep(screenOf(params), step({ type: "tabs" })));
  add("tabFocus", async ({ params }) =>
    locked(screenOf(params), step({ type: "on_tab", tab: params.tab })),
  );
  add("tabClose", async ({ params }) =>
    locked(screenOf(params), step({ type: "on_tab", tab: params.tab, close: true })),
  );

  add("recordingStatus", async ({ params }) => runStep(screenOf(params), step({ type: "record", what: { do: "status" } })));
  add("recordingStart", async ({ params, body }) => {
    const b = (await body()) as Record<string, unknown>;
    return runStep(screenOf(params), step({ type: "record", what: { do: "start", fps: b.fps } }));
  });
  add("recordingStop", async ({ params }) => runStep(screenOf(params), step({ type: "record", what: { do: "stop" } })));

  add("release", async ({ params }) => {
    // Not behind the lock: a person taking over must not wait for a batch to finish.
    const s = screenOf(params);
    const r = await s.holds.releaseAll(false);
    return { released: r.released, released_keys: r.released_keys };
  });

  add("guard", async ({ params, body }) => {
    // Not behind the lock either: it must stop a running batch's next input step.
    const s = screenOf(params);
    const b = (await body()) as { on?: unknown; ttl_ms?: unknown; by?: unknown };
    if (typeof b?.on !== "boolean") throw new AgentError("bad_request", "guard needs {on: boolean}");
    const ttl = typeof b.ttl_ms === "number" && b.ttl_ms > 0 ? Math.min(b.ttl_ms, 24 * 3600_000) : 3600_000;
    s.guardedUntil = b.on ? Date.now() + ttl : 0;
    s.guardedBy = b.on && typeof b.by === "string" ? b.by : "";
    if (b.on) viewers?.guardRaised(s);
    const r = b.on ? await s.holds.releaseAll(false) : { released: [], released_keys: [] };
    return { guarded: b.on, released: r.released, released_keys: r.released_keys };
  });

  add("directViewers", async () => ({ viewers: viewers?.list() ?? [] }));
  add("directViewerInputs", async () => ({ ...(viewers?.takeInputs() ?? { inputs: [], dropped: 0 }), viewers: viewers?.list() ?? [] }));
  add("directViewersClose", async ({ body }) => {
    const b = (await body()) as { issuer?: unknown; control_only?: unknown; reason?: unknown };
    if (typeof b?.issuer !== "string") throw new AgentError("bad_request", "close needs {issuer: string}");
    return { closed: viewers?.closeIssuer(b.issuer, b.control_only === true, typeof b.reason === "string" ? b.reason : "access ended") ?? 0 };
  });

  add("directViewersPassword", async ({ body }) => {
    const b = (await body()) as { epoch?: unknown };
    if (!Number.isSafeInteger(b?.epoch) || (b.epoch as number) < 0) throw new AgentError("bad_request", "password needs {epoch: a whole number ≥ 0}");
    return viewers?.setPasswordEpoch(b.epoch as number) ?? { epoch: b.epoch, closed: 0 };
  });

  const s0 = (): Screen => screens[0];
  add("exec", async ({ body }) => runStep(s0(), step({ type: "exec", what: await body() })));
  add("fileRead", async ({ url }) => runStep(s0(), step({ type: "read_file", path: url.searchParams.get("path") ?? "" })));
  add("fileWrite", async ({ body }) => runStep(s0(), step({ type: "write_file", what: await body() })));
  add("fileList", async ({ url }) => runStep(s0(), step({ type: "list_files", path: url.searchParams.get("path") ?? "" })));
  add("fileGrep", async ({ body }) => runStep(s0(), step({ type: "grep", what: await body() })));
  add("fileGlob", async ({ url }) => {
    const q = url.searchParams;
    return runStep(s0(), step({ type: "glob", what: { pattern: q.get("pattern") ?? "", path: q.get("path") ?? undefined, limit: num(q.get("limit")) } }));
  });

  const match = (r: Route, parts: string[]): Params | null => {
    if (r.parts.length !== parts.length) return null;
    const params: Params = {};
    for (let i = 0; i < parts.length; i++) {
      if (r.parts[i].startsWith(":")) params[r.parts[i].slice(1)] = decodeURIComponent(parts[i]);
      else if (r.parts[i] !== parts[i]) return null;
    }
    return params;
  };

  const verifier = new Verifier(config.secret);
  const unauthorised = (res: http.ServerResponse, why: string): void =>
    send(res, 401, { code: "unauthorized", message: `the request is not signed by the server: ${why}` });

  /**
   * Reads the body of a signed request and checks it against the hash the signature covers;
   * undefined (and a 401 sent) when the head or the body does not pass.
   */
  async function signedBody(req: http.IncomingMessage, res: http.ServerResponse): Promise<Buffer | undefined> {
    const v = verifier.check(req.method ?? "", req.url ?? "", req.headers.authorization);
    if (!v.ok) {
      req.resume();
      unauthorised(res, v.why);
      return undefined;
    }
    const { data, sha256 } = await readRaw(req);
    if (!bodyMatches(sha256, v.bodySha256)) {
      unauthorised(res, "the body is not the one signed");
      return undefined;
    }
    return data;
  }

  const server = http.createServer((req, res) => {
    void (async () => {
      try {
        const url = new URL(req.url ?? "/", "http://agent");
        const cdp = cdpTarget(req.url ?? "");
        if (cdp) {
          const s = screens[cdp.screen];
          const body = await signedBody(req, res);
          if (!body) return;
          if (!s) throw new AgentError("not_found", `no screen ${cdp.screen}; this box has ${screens.length}`);
          proxyCdpHttp(config.cdpPortBase + s.index, cdp.path, req, body, res);
          return;
        }
        const parts = url.pathname.split("/").filter(Boolean);
        const candidates = routes.map((r) => ({ r, params: match(r, parts) })).filter((x) => x.params !== null);
        const hit = candidates.find((x) => x.r.method === req.method);
        if (!hit) {
          req.resume();
          if (candidates.length) throw new AgentError("bad_request", `${req.method} is not allowed on ${url.pathname}`);
          throw new AgentError("not_found", `no route ${req.method} ${url.pathname}`);
        }
        let body: () => Promise<unknown> = async () => ({});
        if (hit.r.auth) {
          const data = await signedBody(req, res);
          if (!data) return;
          const parsed = parseJson(data);
          body = async () => parsed;
        } else {
          req.resume();
        }
        const out = await hit.r.handler({ req, url, params: hit.params as Params, body });
        if (hit.r.parts[0] === "health") {
          send(res, (out as { ok: boolean }).ok ? 200 : 503, out);
          return;
        }
        send(res, 200, out);
      } catch (err) {
        const { code, message } = describeError(err);
        if (!(err instanceof AgentError)) process.stderr.write(`holm-agent: ${req.method} ${req.url}: ${(err as Error)?.stack ?? String(err)}\n`);
        if (!res.headersSent) send(res, HTTP_STATUS[code], { code, message });
        else res.destroy();
      }
    })();
  });
  // WebSockets: DevTools only, signed like any request (the handshake has no body).
  server.on("upgrade", (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on("error", () => undefined);
    const cdp = cdpTarget(req.url ?? "");
    if (!cdp) return refuseUpgrade(socket, 404, `no WebSocket at ${String(req.url).slice(0, 100)}`);
    const v = verifier.check(req.method ?? "", req.url ?? "", req.headers.authorization);
    if (!v.ok) return refuseUpgrade(socket, 401, `the request is not signed by the server: ${v.why}`);
    if (!bodyMatches(EMPTY_BODY_SHA256, v.bodySha256)) return refuseUpgrade(socket, 401, "a WebSocket handshake has no body to sign");
    const s = screens[cdp.screen];
    if (!s) return refuseUpgrade(socket, 404, `no screen ${cdp.screen}; this box has ${screens.length}`);
    proxyCdpUpgrade(config.cdpPortBase + s.index, cdp.path, req, socket, head);
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 70_000;
  server.requestTimeout = 300_000;
  return server;
}
