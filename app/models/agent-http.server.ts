import http from "node:http";
import { AGENT_PORT, type AgentHealth } from "~/protocol/agent";
import { ApiError } from "~/utils/api-error.server";
import { signAgentRequest } from "./agent.server";

// The hot path to a box's agent (callAgent in screen.server.ts: batches, frames, windows): plain
// node:http over kept-alive connections, the request written in one piece. Profiled on a batch of
// one click, fetch (undici) cost the server more than everything else it does for the call: its
// web streams, a request body written as an iterable (head and body as separate writes, so
// separate packets over the box's bridge) and the JS of the dispatcher. The signature is the
// same (agent.server.ts); only the transport differs.

/**
 * Connections to agents are kept and reused (the agent keeps them 65 s). A batch holds one for
 * as long as it runs, so several per box may be open; the agent's server takes any number.
 */
const keepAlive = new http.Agent({ keepAlive: true, maxFreeSockets: 4, scheduling: "lifo", timeout: 60_000 });

export interface AgentAnswer {
  status: number;
  body: Buffer;
}

/**
 * One signed call to a box's agent; the answer read whole, up to `maxBytes`. Errors become
 * `transport`/`timeout` ApiErrors, as agentFetch's do. A kept connection the agent closed just as
 * it was reused (it got nothing: a reset before any answer) is tried once more on a new one.
 */
export async function agentRequest(
  boxId: string,
  address: string,
  method: string,
  path: string,
  body: Buffer | undefined,
  timeoutMs: number,
  maxBytes: number,
): Promise<AgentAnswer> {
  const call: AgentCall = { boxId, address, method, path, body, maxBytes };
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await once(call, Math.max(1, deadline - Date.now()));
    } catch (e) {
      if (attempt === 0 && (e as { retryOnNew?: boolean }).retryOnNew) continue;
      throw e;
    }
  }
}

interface AgentCall {
  boxId: string;
  address: string;
  method: string;
  path: string;
  body: Buffer | undefined;
  maxBytes: number;
}

/** One try of a call, on a kept connection when there is one. */
function once({ boxId, address, method, path, body, maxBytes }: AgentCall, timeoutMs: number): Promise<AgentAnswer> {
  return new Promise((resolve, reject) => {
    const headers: http.OutgoingHttpHeaders = {
      authorization: signAgentRequest(boxId, method, path, body),
      "content-length": body?.length ?? 0,
    };
    if (body) headers["content-type"] = "application/json";
    let answered = false;
    const req = http.request({ host: address, port: AGENT_PORT, method, path, headers, agent: keepAlive });
    const timer = setTimeout(() => req.destroy(new ApiError("timeout", `the box did not answer within ${timeoutMs} ms`)), timeoutMs);
    const fail = (err: Error) => {
      clearTimeout(timer);
      if (err instanceof ApiError) return reject(err);
      const code = (err as NodeJS.ErrnoException).code;
      if (!answered && req.reusedSocket && (code === "ECONNRESET" || code === "EPIPE")) {
        return reject(Object.assign(err, { retryOnNew: true }));
      }
      reject(new ApiError("transport", `the server could not reach the box: ${err.message}`));
    };
    req.on("error", fail);
    req.on("response", (res) => {
      answered = true;
      const tooBig = () =>
        new ApiError("transport", `the box's answer is larger than ${maxBytes} bytes; ask for less in one call`, { retryable: false });
      if (Number(res.headers["content-length"] ?? NaN) > maxBytes) return req.destroy(tooBig());
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (c: Buffer) => {
        size += c.length;
        if (size > maxBytes) return req.destroy(tooBig());
        chunks.push(c);
      });
      res.on("error", (err) => fail(err instanceof ApiError ? err : new ApiError("transport", `the box's answer broke off: ${err.message}`)));
      res.on("aborted", () => fail(new ApiError("transport", "the box's answer broke off")));
      res.on("end", () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
      });
    });
    // Head and body in one write (Node joins the first chunk of end() with the head).
    req.end(body);
  });
}

/**
 * The agent's /health over a kept connection, as batches reach it: the warm pool probes a box
 * before every claim, and a new connection through fetch was most of a claim's own time.
 * Undefined when the agent does not answer (or answers nonsense).
 */
export async function keptHealth(boxId: string, address: string, timeoutMs: number): Promise<AgentHealth | undefined> {
  try {
    const a = await agentRequest(boxId, address, "GET", "/health", undefined, timeoutMs, 64 * 1024);
    return JSON.parse(a.body.toString("utf8")) as AgentHealth;
  } catch {
    return undefined;
  }
}
