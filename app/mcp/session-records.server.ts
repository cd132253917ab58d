import { ApiError } from "~/utils/api-error.server";
import { REDIS_AWAY, onClusterMessage, onSharedRedis, publish } from "~/utils/cluster.server";
import { log } from "~/utils/log.server";

// An MCP session as every server of a cluster knows it (docs/decisions/0013, 0021). Behind a load
// balancer with no stickiness, a session's requests land on any server: each one that gets a
// session it does not hold reads this record and makes its own copy (sessions.server.ts). What a
// session holds beyond the record is per copy and rebuilt: the tools call /v1 with the bearer of
// each request, and the client's capabilities come from its initialize request, kept here.
//
// The record lives in Redis under a TTL of the idle limit, moved on by the servers the session's
// requests reach, and goes when the session ends anywhere (DELETE, its key revoked or expired, a
// limit); the servers holding a copy are told to close theirs. Without Redis (one server) there
// is no record: the session is this process's only.

export interface SessionRecord {
  /** `server` or `key:<id>` (issuerOf): the one principal the session answers. */
  principal: string;
  /** The workspace of a key; null for the server token. */
  owner: string | null;
  /** The params of the client's initialize request (protocol version, capabilities, client info). */
  init: unknown;
  createdMs: number;
}

/** Why a session ended, as a tool call still running on another server's copy hears it. */
export interface Ending {
  code: string;
  message: string;
}

const KEY = (id: string) => `holm:mcp:session:${id}`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const away = (err: unknown) => {
  log.error({ err }, "an MCP session record could not be reached");
  return new ApiError("unavailable", REDIS_AWAY, { retryable: true });
};

/** Writes the record of a new session (nothing for one server); refused while Redis is away. */
export async function putRecord(id: string, record: SessionRecord, ttlMs: number): Promise<void> {
  await onSharedRedis((r) => r.set(KEY(id), JSON.stringify(record), "PX", ttlMs))?.catch((err) => {
    throw away(err);
  });
}

/**
 * The record of session `id`: null when there is none (never was, ended, idle past its TTL, or
 * one server); refused while Redis is away (a 404 then would tell the client its session is gone).
 */
export async function readRecord(id: string): Promise<SessionRecord | null> {
  if (!UUID.test(id)) return null;
  const raw = await onSharedRedis((r) => r.get(KEY(id)))?.catch((err) => {
    throw away(err);
  });
  if (!raw) return null;
  try {
    return JSON.parse(raw) as SessionRecord;
  } catch {
    return null;
  }
}

/** Moves the record's idle limit on: the session was used. A failure only shortens its life. */
export function touchRecord(id: string, ttlMs: number): void {
  onSharedRedis((r) => r.pexpire(KEY(id), ttlMs))?.catch((err) => log.warn({ err }, "an MCP session record's idle limit was not moved on"));
}

/** Ends session `id` on every server: its record goes, and the servers holding a copy close it. */
export async function endEverywhere(id: string, ending: Ending): Promise<void> {
  await onSharedRedis((r) => r.del(KEY(id)))?.catch((err) => log.error({ err }, "an ended MCP session's record was not removed"));
  await publish("mcp-session-ended", { id, ending });
}

/**
 * Hands the client's answers to a server's own requests (a person's answer to remove_box's
 * question) to the other servers' copies of session `id`: the request went out on the stream of
 * the server that asked, and the answer is a POST of its own, which may land anywhere.
 */
export function relayAnswers(id: string, messages: unknown[]): Promise<void> {
  return publish("mcp-answers", { id, messages });
}

/** Listens for answers relayed by other servers. */
export function onRelayedAnswers(handler: (id: string, messages: unknown[]) => void): void {
  onClusterMessage("mcp-answers", (payload) => {
    const p = payload as { id?: unknown; messages?: unknown };
    if (typeof p.id === "string" && Array.isArray(p.messages)) handler(p.id, p.messages);
  });
}

/** Listens for sessions ended on other servers. */
export function onEndedElsewhere(handler: (id: string, ending: Ending) => void): void {
  onClusterMessage("mcp-session-ended", (payload) => {
    const p = payload as { id?: unknown; ending?: Ending };
    if (typeof p.id === "string" && p.ending) handler(p.id, p.ending);
  });
}
