import { createHash, createHmac, randomBytes } from "node:crypto";
import { AGENT_PORT, AGENT_SECRET_PATH, type AgentHealth, VNC_PASSWD_PATH } from "~/protocol/agent";
import { ApiError } from "~/utils/api-error.server";
import { derive } from "~/utils/secret.server";
import { vncPasswdFile, vncPasswordFrom } from "~/protocol/rfb/vnc-auth";

// How the server talks to the agent inside a box: HTTP on the box's bridge address, every
// request signed (HMAC-SHA256 over method, path and query, time, nonce and body hash) with a
// per-box secret derived from the server key, so nothing is stored, a restarted server still
// gets in, and a request read off the wire cannot be replayed. The contract is images/README.md.


/** Answers of up to this size are read for ordinary calls (window lists, tabs, cursor, guard…). */
export const AGENT_ANSWER_MAX = 8 * 1024 * 1024;
/**
 * For the calls that carry bulk: a 64 MiB file as base64 (~86 MiB), a frame, exec output (16 MiB
 * per stream), a batch with those. Beyond it the call fails rather than the server buffering
 * whatever a box sends.
 */
export const AGENT_BULK_MAX = 128 * 1024 * 1024;
const HEALTH_MAX = 64 * 1024;

const secrets = new Map<string, string>();
const SECRETS_CACHED = 4096;

/** The box's agent secret (cached: signing a request then costs one HMAC, microseconds). */
export function agentSecret(boxId: string): string {
  let s = secrets.get(boxId);
  if (s === undefined) {
    s = derive(`agent:${boxId}`);
    if (secrets.size >= SECRETS_CACHED) secrets.delete(secrets.keys().next().value!);
    secrets.set(boxId, s);
  }
  return s;
}

/** The box's VNC password: 8 printable characters, known to the server and x11vnc only. */
export function vncPassword(boxId: string): string {
  return vncPasswordFrom(Buffer.from(derive(`vnc:${boxId}`), "base64url"));
}

/** The files a box needs to boot: its agent secret and x11vnc's password file. */
export function boxSecretFiles(boxId: string): { path: string; data: Buffer }[] {
  return [
    { path: AGENT_SECRET_PATH, data: Buffer.from(`${agentSecret(boxId)}\n`) },
    { path: VNC_PASSWD_PATH, data: vncPasswdFile(vncPassword(boxId)) },
  ];
}

const EMPTY_SHA256 = createHash("sha256").digest("hex");

/**
 * The Authorization value for one request to a box's agent. `target` is the path and query
 * exactly as they go on the wire. Exported for the DevTools relay (images/README.md).
 */
export function signAgentRequest(boxId: string, method: string, target: string, body?: Uint8Array): string {
  const b = body && body.length ? createHash("sha256").update(body).digest("hex") : EMPTY_SHA256;
  const t = String(Date.now());
  const n = randomBytes(16).toString("base64url");
  const s = createHmac("sha256", agentSecret(boxId))
    .update(`holm-agent-v1\n${method.toUpperCase()}\n${target}\n${t}\n${n}\n${b}`)
    .digest("base64url");
  return `Holm-HMAC-SHA256 t=${t},n=${n},b=${b},s=${s}`;
}

/** One health probe; undefined when the agent does not answer at all (or answers nonsense). */
export async function probeHealth(address: string, timeoutMs = 1000): Promise<AgentHealth | undefined> {
  try {
    const res = await fetch(`http://${address}:${AGENT_PORT}/health`, { signal: AbortSignal.timeout(timeoutMs) });
    return JSON.parse((await readCapped(res, HEALTH_MAX)).toString("utf8")) as AgentHealth;
  } catch {
    return undefined;
  }
}

export function allUp(h: AgentHealth | undefined, screens: number): boolean {
  if (!h?.ok || !Array.isArray(h.screens) || h.screens.length < screens) return false;
  return h.screens.every((s) => s.x && s.vnc && s.cdp && s.window !== false);
}

/**
 * A response body of at most `max` bytes; a larger one (by its Content-Length or as it streams)
 * is cut off and refused, so a box cannot make the server buffer without bound.
 */
export async function readCapped(res: Response, max: number): Promise<Buffer> {
  const tooBig = () =>
    new ApiError("transport", `the box's answer is larger than ${max} bytes; ask for less in one call`, { retryable: false });
  const declared = Number(res.headers.get("content-length") ?? NaN);
  if (declared > max) {
    await res.body?.cancel().catch(() => undefined);
    throw tooBig();
  }
  if (!res.body) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = res.body.getReader();
  for (;;) {
    let r: ReadableStreamReadResult<Uint8Array>;
    try {
      r = await reader.read();
    } catch (err) {
      if ((err as Error).name === "TimeoutError") throw new ApiError("timeout", "the box did not finish its answer in time");
      throw new ApiError("transport", `the box's answer broke off: ${(err as Error).message}`);
    }
    if (r.done) break;
    size += r.value.length;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      throw tooBig();
    }
    chunks.push(r.value);
  }
  return Buffer.concat(chunks, size);
}

/** Calls the agent, signed for the box. Errors become `transport`/`timeout` ApiErrors. */
export async function agentFetch(
  boxId: string,
  address: string,
  path: string,
  init: Omit<RequestInit, "body"> & { body?: Uint8Array; timeoutMs?: number } = {},
): Promise<Response> {
  const { timeoutMs = 60_000, ...rest } = init;
  const url = new URL(`http://${address}:${AGENT_PORT}${path}`);
  const headers = new Headers(rest.headers);
  // Signed as it goes out: the URL parser may have normalised the path.
  headers.set("authorization", signAgentRequest(boxId, rest.method ?? "GET", url.pathname + url.search, rest.body));
  try {
    return await fetch(url, {
      ...rest,
      body: rest.body as BodyInit | undefined,
      headers,
      signal: rest.signal ?? AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    if ((err as Error).name === "TimeoutError") {
      throw new ApiError("timeout", `the box did not answer within ${timeoutMs} ms`);
    }
    throw new ApiError("transport", `the server could not reach the box: ${(err as Error).message}`);
  }
}
