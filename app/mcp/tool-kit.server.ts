import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import {
  type CallToolResult,
  CallToolRequestSchema,
  type RequestId,
  type ServerNotification,
  type ServerRequest,
  type ToolAnnotations,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { HolmApiError, HolmClient } from "~/client/holm-client";

export { seg } from "~/client/holm-client";
import { ApiError } from "~/utils/api-error.server";
import { env } from "~/utils/env.server";
import { validate } from "~/utils/validate.server";
import { type ImageSpot, withImages } from "./images.server";

// What every MCP tool shares (docs/decisions/0013): each tool is a thin call of one /v1 route
// through the typed client, sent to this same server over loopback with the caller's own bearer,
// so the route authorizes, validates, checks takeovers and records the trace exactly as it does
// for a direct call. A /v1 error comes back as a tool result with isError (the agent reads it
// and can act on it), never as a protocol error.

export type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** The box a tool acts on: the id /v1 takes in its path. */
export const BoxId = z.string().min(1).max(200).describe("The box id (box_…), from launch_box or list_boxes.");
/** A screen of the box: the `{screen}` of /v1's screen routes. */
export const ScreenNo = z.number().int().min(0).max(7).default(0).describe("The screen, 0 (the default) to screens-1.");

/** This server's own address, as a loopback client reaches it (0.0.0.0 and :: listen on it too). */
export function loopbackBase(): string {
  const { host, port } = env().HOLM_SERVER_ADDR;
  const h = host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "[::1]" : host.includes(":") ? `[${host}]` : host;
  return `http://${h}:${port}`;
}

/**
 * The client a tool call uses: the bearer of the HTTP request that carried this call (the MCP
 * endpoint puts it in authInfo after checking it), none in open mode.
 */
export function clientFor(extra: Extra): HolmClient {
  // A call on a paused box waits for its resume, but an MCP client stops waiting on its own (the
  // SDK's default: 60 s) and its agent would see no result at all: answer `timeout:` first.
  const headers = { prefer: `wait=${env().HOLM_MCP_PAUSED_WAIT_SECS}` };
  return new HolmClient({ baseUrl: loopbackBase(), token: extra.authInfo?.token || undefined, headers });
}

export const text = (t: string): CallToolResult => ({ content: [{ type: "text", text: t }] });
/** A /v1 answer as a tool result: its JSON, the images at the spots given moved to image blocks (images.server.ts). */
export const json = (body: unknown, images?: ImageSpot[]): CallToolResult => withImages(body, images);
export const refusal = (code: string, message: string): CallToolResult => ({ isError: true, content: [{ type: "text", text: `${code}: ${message}` }] });

export interface ToolDef<S extends z.ZodObject> {
  name: string;
  title: string;
  description: string;
  input: S;
  annotations?: ToolAnnotations;
  run: (args: z.output<S>, client: HolmClient, extra: Extra) => Promise<CallToolResult>;
}

type Handler = (args: unknown, extra: Extra) => Promise<CallToolResult>;

/** Each server's tools, by name: what its tools/call handler runs (see `answerToolCalls`). */
const handlers = new WeakMap<McpServer, Map<string, Handler>>();
/** Each server's tool calls still running, by JSON-RPC id (see `answerPending`). */
const running = new WeakMap<McpServer, Set<RequestId>>();

/**
 * The server's tools/call handler, in place of the SDK's own: the SDK validates arguments before
 * a tool runs and reports a mismatch as `MCP error -32602: Input validation error: …`, not the
 * `code: message` every other tool error carries. The SDK still lists the tools (their input
 * schemas, from registerTool); the calls are answered here, arguments validated by the tool.
 */
function answerToolCalls(server: McpServer) {
  server.server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const run = handlers.get(server)?.get(request.params.name);
    if (!run) return refusal("not_found", `no tool ${request.params.name}; tools/list names them`);
    let calls = running.get(server);
    if (!calls) running.set(server, (calls = new Set()));
    calls.add(extra.requestId);
    try {
      return await run(request.params.arguments ?? {}, extra);
    } finally {
      calls.delete(extra.requestId);
    }
  });
}

/**
 * Answers every tool call still running on `server` with the tool error `code: message`, before
 * its session closes. Closing alone ends a call's SSE stream with no answer: the SDK client then
 * resumes it by Last-Event-ID, is refused, and waits out its own timeout (60 s) for nothing.
 * Once closed, the transport drops what the calls themselves answer later (their signal aborts).
 */
export async function answerPending(server: McpServer, code: string, message: string) {
  const transport = server.server.transport;
  const ids = [...(running.get(server) ?? [])];
  running.get(server)?.clear();
  if (!transport) return;
  for (const id of ids) {
    // A call that answered meanwhile has no stream left to write to: nothing to do for it.
    await transport.send({ jsonrpc: "2.0", id, result: refusal(code, message) }).catch(() => {});
  }
}

/**
 * Registers a tool. Arguments that do not fit its input are `bad_request: <field>: …` (as /v1
 * words it); a HolmApiError (the route's refusal) becomes the tool's `code: message` result.
 */
export function addTool<S extends z.ZodObject>(server: McpServer, def: ToolDef<S>) {
  server.registerTool(def.name, { title: def.title, description: def.description, inputSchema: def.input, annotations: def.annotations }, (() => {
    throw new Error("answered by answerToolCalls");
  }) as never);
  let tools = handlers.get(server);
  if (!tools) {
    handlers.set(server, (tools = new Map()));
    // After the SDK's registerTool set its own handler (it does at the first tool).
    answerToolCalls(server);
  }
  tools.set(def.name, async (raw, extra) => {
    try {
      const args = validate(def.input, raw, "arguments") as z.output<S>;
      return await def.run(args, clientFor(extra), extra);
    } catch (e) {
      if (e instanceof HolmApiError || e instanceof ApiError) return refusal(e.code, e.message);
      if (extra.signal.aborted) return refusal("timeout", "the call was cancelled");
      throw e;
    }
  });
}

/** Splits the path parameters from what goes in the body or query. */
export function split<T extends { box: string; screen?: number }>(args: T): { box: string; screen: number; rest: Omit<T, "box" | "screen"> } {
  const { box, screen, ...rest } = args;
  return { box, screen: screen ?? 0, rest };
}

/**
 * Tool annotations (hints for the client; /v1 decides what is allowed). The MCP spec reads
 * `destructiveHint: false` as "only additive updates", which clients may approve unasked: so a
 * tool that can delete, overwrite or kill (a command, a file write, a click in a page, a batch
 * holding any of those, a stop) is WRITE; ADD is for what only adds or can be undone as it was
 * (launch, fork, pause, resume, a ticket, a takeover).
 */
export const READ: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };
export const WRITE: ToolAnnotations = { readOnlyHint: false, destructiveHint: true, openWorldHint: true };
export const ADD: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, openWorldHint: false };
