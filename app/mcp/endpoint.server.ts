import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { requireActor } from "~/edge/auth.server";
import { rememberPeer } from "~/edge/peer.server";
import { readText } from "~/edge/route.server";
import { issuerOf } from "~/models/actor";
import { ApiError, errorResponse } from "~/utils/api-error.server";
import { protoKeyAt } from "~/utils/proto-key";
import { INIT_LIMIT, findSession, openSession, relayIfAnswers, resumeSession } from "./sessions.server";

// `/mcp`: MCP over Streamable HTTP (docs/decisions/0013). POST carries JSON-RPC (an initialize
// request opens a session), GET opens the session's SSE stream (with Last-Event-ID, it replays
// what a dropped stream missed), DELETE ends the session. Before this runs, the HTTP edge
// (server/http-edge.ts) has checked Host, Origin, the JSON content type and the body size as for
// /v1; here every request is authorized as /v1 is, and a session answers only its own principal.

/** A JSON-RPC error answer in the SDK transport's shape (what an MCP client expects there). */
function rpcError(status: number, code: number, message: string): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status });
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * A tools/call request whose params are not `{name, arguments?}`, answered as JSON-RPC's -32602
 * Invalid params in a sentence. The SDK would parse it in the request handler's wrapper and
 * answer -32603 Internal error with the whole zod issue dump.
 */
function badToolCall(body: unknown): Response | undefined {
  if (!isObject(body) || body.method !== "tools/call" || !(typeof body.id === "string" || typeof body.id === "number")) return undefined;
  const p = body.params;
  let why: string | undefined;
  if (!isObject(p)) why = "params must be an object, {name, arguments}";
  else if (typeof p.name !== "string" || p.name === "") why = "params.name must name a tool (a string; tools/list names them)";
  else if (p.arguments !== undefined && !isObject(p.arguments)) why = "params.arguments must be an object of the tool's arguments by name";
  if (why === undefined) return undefined;
  return Response.json({ jsonrpc: "2.0", id: body.id, error: { code: -32602, message: `Invalid params: ${why}` } });
}

function bearerOf(request: Request): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get("authorization") ?? "")?.[1];
}

export async function serveMcp(request: Request, context: unknown): Promise<Response> {
  // The peer address (from server.ts's load context), for open mode's loopback rule.
  rememberPeer(request, (context as { remoteAddress?: string } | undefined)?.remoteAddress);
  try {
    const actor = await requireActor(request);
    if (actor.kind === "workspace" && actor.via !== "key") {
      // A console session's cookie is not forwarded to /v1 (and changes there need its CSRF
      // token): MCP clients use a key.
      throw new ApiError("unauthorized", "MCP takes Authorization: Bearer <a holm_sk_ key from the console's Keys page, or HOLM_SERVER_TOKEN>");
    }
    const principal = issuerOf(actor);
    // The tools forward this bearer to /v1 (tool-kit.server.ts): each call is authorized there too.
    const authInfo: AuthInfo = { token: bearerOf(request) ?? "", clientId: principal, scopes: [] };
    let parsedBody: unknown;
    let bytes = 0;
    if (request.method === "POST") {
      try {
        const text = await readText(request);
        bytes = Buffer.byteLength(text);
        parsedBody = JSON.parse(text);
      } catch (e) {
        if (e instanceof ApiError) throw e;
        return rpcError(400, -32700, "Parse error: the body is not JSON");
      }
      // The SDK reads a message through its own schemas (tool arguments are a z.record, which
      // drops a `__proto__` key unseen) before a tool's validate() could refuse it.
      const proto = protoKeyAt(parsedBody);
      if (proto !== undefined) return rpcError(400, -32600, `Invalid Request: ${proto}: "__proto__" cannot be a key`);
    }
    const sessionId = request.headers.get("mcp-session-id");
    if (sessionId !== null) {
      // Another principal's session is answered exactly as one that does not exist.
      // Opened on another server of the cluster, it is made here from its shared record.
      const session = findSession(sessionId, principal) ?? (await resumeSession(sessionId, principal));
      if (!session) return rpcError(404, -32001, "Session not found");
      const invalid = badToolCall(parsedBody);
      if (invalid) return invalid;
      const answer = await session.transport.handleRequest(request, { parsedBody, authInfo });
      // A DELETE is answered once the other servers' copies have been told to close.
      if (request.method === "DELETE") await session.ended;
      if (request.method === "POST" && answer.status === 202) await relayIfAnswers(sessionId, parsedBody, bytes);
      return answer;
    }
    if (request.method !== "POST" || !isInitializeRequest(parsedBody)) {
      return rpcError(400, -32000, "Bad Request: send Mcp-Session-Id, or open a session with an initialize request (POST)");
    }
    // Its params are kept in Redis for the session's life and read by every server that resumes it.
    if (bytes > INIT_LIMIT) {
      const why = `an initialize request may be at most ${INIT_LIMIT} bytes of JSON; this one is ${bytes} (shorten clientInfo or capabilities)`;
      return Response.json({ jsonrpc: "2.0", id: (parsedBody as { id?: unknown }).id ?? null, error: { code: -32602, message: `Invalid params: ${why}` } }, { status: 400 });
    }
    return await openSession(principal, actor.kind === "workspace" ? actor.workspaceId : null, request, { parsedBody, authInfo });
  } catch (e) {
    return errorResponse(e);
  }
}
