import { randomInt, randomUUID } from "node:crypto";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { principalAccess } from "~/models/access.server";
import { concerns, onPrincipalChange, principalSeq } from "~/models/principal-changes.server";
import { ApiError } from "~/utils/api-error.server";
import { addBoxTools } from "./box-tools.server";
import { BoundedEventStore, EVENT_STORE_LIMITS } from "./event-store.server";
import { addScreenTools } from "./screen-tools.server";
import { type JSONRPCResponse, JSONRPCResponseSchema } from "@modelcontextprotocol/sdk/types.js";
import {
  type Ending,
  type SessionRecord,
  endEverywhere,
  onEndedElsewhere,
  onRelayedAnswers,
  putRecord,
  readRecord,
  relayAnswers,
  touchRecord,
} from "./session-records.server";
import { answerPending } from "./tool-kit.server";
import { log } from "~/utils/log.server";

// MCP sessions (docs/decisions/0013). A session is bound to the principal that opened it
// (`server` or `key:<id>`): a request naming it with any other credentials is answered as for an
// unknown session, so a leaked session id is worth nothing without its key. In a cluster
// (ADR 0021) a session's record is shared (session-records.server.ts) and any server its requests
// reach makes its own copy of it, so no stickiness is needed. A session ends, on every server, on
// DELETE, when its key is revoked or expires (open streams close then), or, past `perPrincipal`,
// when the same principal opens another (its least recently used one goes); the same past
// `perOwner` for a workspace (keys are many). At `total`, the workspace holding the most gives up
// its least recently used one: no workspace can keep another out. After SESSION_LIMITS.idleMs
// without a request it ends (the record lapses); a server's copy idle that long is dropped.

export const SESSION_LIMITS = { perPrincipal: 16, perOwner: 64, total: 512, idleMs: 30 * 60_000, sweepMs: 60_000 };

/**
 * The most an initialize request may weigh, in bytes of JSON: its params are the session's shared
 * record, kept in Redis for the session's life and read by every server it reaches. A client's
 * own are a few hundred bytes (protocol version, capabilities, name and version).
 */
export const INIT_LIMIT = 16 * 1024;

/**
 * The most a POST of answers may weigh to be relayed to the other servers (relayIfAnswers): a
 * person's answer to remove_box's question is a few hundred bytes, every server parses what is
 * published, and Redis drops a subscriber whose output buffer passes its limit (32 MB by
 * default), losing the cluster's messages to every server. /mcp takes up to 96 MiB (write_file
 * carries a 64 MiB file as base64), so the relay has its own limit.
 */
export const RELAY_LIMIT = 64 * 1024;

type Held = Pick<McpSession, "principal" | "owner" | "lastSeenMs">;

/**
 * The sessions to close before `principal` of `owner` opens one, least recently used first:
 * past its key's limit, past its workspace's, and at the server's total, from whichever
 * workspace (or the server token) holds the most.
 */
export function sessionsToClose<T extends Held>(held: T[], principal: string, owner: string | null, limits = SESSION_LIMITS): T[] {
  const out = new Set<T>();
  const oldestFirst = [...held].sort((a, b) => a.lastSeenMs - b.lastSeenMs);
  const trim = (group: T[], keep: number) => {
    const live = group.filter((s) => !out.has(s));
    for (const s of live.slice(0, Math.max(0, live.length - keep))) out.add(s);
  };
  trim(oldestFirst.filter((s) => s.principal === principal), limits.perPrincipal - 1);
  trim(oldestFirst.filter((s) => s.owner === owner), limits.perOwner - 1);
  while (held.length - out.size >= limits.total) {
    const groups = new Map<string | null, T[]>();
    for (const s of oldestFirst) if (!out.has(s)) groups.set(s.owner, [...(groups.get(s.owner) ?? []), s]);
    const largest = [...groups.values()].sort((a, b) => b.length - a.length)[0];
    if (!largest) break;
    out.add(largest[0]!);
  }
  return [...out];
}

export interface McpSession {
  id: string;
  /** `server` or `key:<id>` (issuerOf). */
  principal: string;
  /** The workspace of a key; null for the server token. */
  owner: string | null;
  transport: WebStandardStreamableHTTPServerTransport;
  server: McpServer;
  lastSeenMs: number;
  /** Ends the session when its key expires. */
  expiry?: NodeJS.Timeout;
  /** When this server last moved the shared record's idle limit on. */
  touchedMs: number;
  /** Set when only this server's copy closes (idle here, or ended elsewhere): the session lives on. */
  here?: boolean;
  /** Once it closed: the other servers have been told (or could not be). */
  ended?: Promise<void>;
}

const sessions = new Map<string, McpSession>();
let watching = false;

/** The session `id`, if it exists and `principal` opened it. */
export function findSession(id: string, principal: string): McpSession | undefined {
  const s = sessions.get(id);
  if (!s || s.principal !== principal) return undefined;
  s.lastSeenMs = Date.now();
  // Once a minute is enough against a 30-minute limit, and spares Redis a write per request.
  if (s.lastSeenMs - s.touchedMs > 60_000) {
    s.touchedMs = s.lastSeenMs;
    touchRecord(id, SESSION_LIMITS.idleMs);
  }
  return s;
}

export function openSessionCount(principal?: string): number {
  let n = 0;
  for (const s of sessions.values()) if (principal === undefined || s.principal === principal) n++;
  return n;
}

/** The MCP server of one session: its tools call /v1 (tool-kit.server.ts). */
function buildServer(): McpServer {
  const server = new McpServer(
    { name: "holm", version: "0.1.0" },
    {
      capabilities: { tools: {} },
      instructions:
        "holm runs isolated Linux desktops (boxes) with Chromium. Launch one with launch_box, drive it with batch (pointer, keys, " +
        "open_url, page steps by element) or page_element, look with frame and page_snapshot, read what happened with read_trace, " +
        "and remove it with remove_box (confirm: true) when done. While a person holds a screen, input is refused with `denied`.",
    },
  );
  addBoxTools(server);
  addScreenTools(server);
  return server;
}

/**
 * Closes a session and its streams (an open SSE stream ends). A tool call still running is
 * answered first with `ending` as its tool error: its client gets a result, not a stream that
 * ends with none (and a 60 s wait).
 */
export async function closeSession(s: McpSession, ending: Ending) {
  if (sessions.get(s.id) === s) sessions.delete(s.id);
  if (s.expiry) clearTimeout(s.expiry);
  // The other servers' copies hear why, and their calls still running are answered with it.
  s.ended ??= s.here ? Promise.resolve() : endEverywhere(s.id, ending);
  await answerPending(s.server, ending.code, ending.message);
  await s.server.close().catch((err) => log.error({ err }, `closing MCP session (${ending.message}) failed`));
  await s.ended;
}

/** What a call hears when its key lost the workspace (principalAccess says why). */
function lost(why: string): Ending {
  if (why.includes("revoked")) return { code: "unauthorized", message: "the API key was revoked" };
  if (why.includes("expired")) return { code: "unauthorized", message: "the API key expired" };
  return { code: "unauthorized", message: `the API key no longer reaches its workspace (${why})` };
}

/**
 * Opens a session for `principal`: answers its initialize `request` (options.parsedBody). Once the
 * SDK has taken it, the session is registered here and its record, with the initialize params,
 * is shared for the other servers' copies; an initialize the SDK refuses (406, 415, …) leaves
 * neither, and counts against no limit.
 */
export async function openSession(
  principal: string,
  owner: string | null,
  request: Request,
  options: { parsedBody: unknown; authInfo?: AuthInfo },
): Promise<Response> {
  const id = randomUUID();
  const init = (options.parsedBody as { params?: unknown } | null)?.params;
  const record: SessionRecord = { principal, owner, init, createdMs: Date.now() };
  const transport = await copyOf(id, record);
  const answer = await transport.handleRequest(request, options);
  const s = sessions.get(id);
  if (s?.transport !== transport) {
    await transport.close();
    return answer;
  }
  // Before the client has the id (the answer's header): its next request may go to another server.
  try {
    await putRecord(id, record, SESSION_LIMITS.idleMs);
  } catch (e) {
    await answer.body?.cancel();
    s.here = true;
    await closeSession(s, { code: "unavailable", message: "the session could not be shared with the other servers; open a new one" });
    throw e;
  }
  return answer;
}

/**
 * Makes `server`'s own requests to the client (elicitation) count from `start` instead of 0: each
 * copy of a session counts on its own, and an answer relayed to every copy (relayAnswers) must
 * reach only the one that asked. The SDK has no option for it: this is its private counter,
 * which tests/unit/mcp-sessions.test.ts checks is still the one its requests are numbered from.
 */
export function startRequestIdsAt(server: McpServer, start: number): void {
  (server.server as unknown as { _requestMessageId: number })._requestMessageId = start;
}

/** Whether `id` could number a request of a copy: they count up from below 2^47 (copyOf). */
const couldBeOurs = (id: unknown) => typeof id === "number" && Number.isSafeInteger(id) && id >= 0;

const resuming = new Map<string, Promise<McpSession | undefined>>();

/**
 * This server's copy of session `id`, opened on another server, when its shared record says
 * `principal` opened it (anything else is answered as an unknown session). The copy is initialized
 * with the client's own initialize params, so it knows the client as the first server did.
 */
export function resumeSession(id: string, principal: string): Promise<McpSession | undefined> {
  let p = resuming.get(id);
  if (!p) {
    p = (async () => {
      const record = await readRecord(id);
      if (!record || record.principal !== principal) return undefined;
      if (sessions.has(id)) return sessions.get(id);
      const transport = await copyOf(id, record);
      const message = { jsonrpc: "2.0" as const, id: "holm-resume", method: "initialize", params: record.init };
      const req = new Request("http://holm.internal/mcp", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify(message),
      });
      const answer = await transport.handleRequest(req, { parsedBody: message });
      await answer.text();
      const s = sessions.get(id);
      if (!s || s.transport !== transport) {
        log.error({ status: answer.status }, "an MCP session could not be resumed here");
        return undefined;
      }
      return s;
    })().finally(() => resuming.delete(id));
    resuming.set(id, p);
  }
  return p.then((s) => (s && s.principal === principal ? findSession(id, principal) : undefined));
}

/** This server's copy of the session `id` of `record`, registered when its initialize is taken. */
async function copyOf(id: string, { principal, owner }: SessionRecord): Promise<WebStandardStreamableHTTPServerTransport> {
  watch();
  const seq = principalSeq();
  const access = await principalAccess(principal, owner, "member");
  if (!access.ok) throw new ApiError("unauthorized", access.why);
  for (const s of sessionsToClose([...sessions.values()], principal, owner)) {
    const message = s.principal === principal ? "too many MCP sessions for one key" : "too many MCP sessions open";
    await closeSession(s, { code: "unavailable", message: `the session was closed: ${message}; open a new one` });
  }
  const server = buildServer();
  startRequestIdsAt(server, randomInt(2 ** 47));
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: () => id,
    eventStore: new BoundedEventStore({ ...EVENT_STORE_LIMITS, sessions: () => sessions.size }),
    onsessioninitialized: () => {
      const now = Date.now();
      const s: McpSession = { id, principal, owner, transport, server, lastSeenMs: now, touchedMs: now };
      if (access.untilMs !== undefined) {
        s.expiry = setTimeout(() => void closeSession(s, lost("expired")), Math.max(0, access.untilMs - Date.now()));
        s.expiry.unref();
      }
      sessions.set(id, s);
      // Access changed while it was checked (a key revoked then): the listener missed this copy.
      if (principalSeq() !== seq) void recheck(s);
    },
  });
  // Before connect(), which chains its own handler after this one. DELETE, close() and the
  // checks below all end here; unless only this copy closes, the session ends on every server.
  transport.onclose = () => {
    const s = sessions.get(id);
    if (s?.transport === transport) {
      sessions.delete(s.id);
      if (s.expiry) clearTimeout(s.expiry);
      s.ended ??= s.here ? Promise.resolve() : endEverywhere(id, { code: "unavailable", message: "the session was ended (DELETE); open a new one" });
    }
  };
  await server.connect(transport);
  return transport;
}

/** A JSON-RPC result or error: the client's answer to a request of the server. */
const isAnswer = (m: unknown): m is JSONRPCResponse => JSONRPCResponseSchema.safeParse(m).success;

/**
 * After a POST of `bytes` that carried answers to requests of a server (and nothing else), tells
 * the other servers' copies: the request may have gone out from any of them. Only small answers
 * whose ids a copy could have sent: anything else is what the SDK makes of an answer to a request
 * nobody sent (taken, 202, and dropped).
 */
export async function relayIfAnswers(id: string, body: unknown, bytes: number): Promise<void> {
  if (bytes > RELAY_LIMIT) return;
  const messages = Array.isArray(body) ? body : [body];
  if (messages.length === 0 || !messages.every((m) => isAnswer(m) && couldBeOurs(m.id))) return;
  await relayAnswers(id, messages);
}

async function recheck(s: McpSession) {
  const access = await principalAccess(s.principal, s.owner, "member").catch((err) => {
    log.error({ err }, "checking an MCP session's access failed");
    return { ok: false, why: "its access could not be checked" } as const;
  });
  if (!access.ok) await closeSession(s, lost(access.why));
}

/** Starts, once, the idle sweep and the revocation listener. */
function watch() {
  if (watching) return;
  watching = true;
  onPrincipalChange((change) => {
    for (const s of sessions.values()) if (concerns(change, s.principal)) void recheck(s);
  });
  onRelayedAnswers((id, messages) => {
    const s = sessions.get(id);
    if (!s) return;
    // An answer to a request this copy did not send is dropped by the SDK (its onerror).
    for (const m of messages) if (isAnswer(m)) s.transport.onmessage?.(m);
  });
  onEndedElsewhere((id, ending) => {
    const s = sessions.get(id);
    if (!s) return;
    s.here = true;
    void closeSession(s, ending);
  });
  setInterval(() => {
    const idleSince = Date.now() - SESSION_LIMITS.idleMs;
    for (const s of sessions.values()) {
      if (s.lastSeenMs >= idleSince) continue;
      // Idle here; its record lapses on its own unless another server's copy is in use.
      s.here = true;
      void closeSession(s, { code: "unavailable", message: "the session was closed after 30 minutes without a request" });
    }
  }, SESSION_LIMITS.sweepMs).unref();
}
