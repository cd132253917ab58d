import type { EventStore } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

// What an MCP session sent on its SSE streams, kept a short while so a client that lost its
// connection can come back with Last-Event-ID and get what it missed (Streamable HTTP
// resumability; docs/decisions/0013). One store per session, so an event id never reaches another
// session's events. Bounded three ways (count, bytes, age); eviction is oldest first, so when the
// event a client names is still here, every later one is too, and a replay never skips silently:
// an event id that is gone (or never was) is refused, and the client starts over.

export interface EventStoreLimits {
  /** Events kept per session. */
  maxEvents: number;
  /** Bytes of JSON kept per session (a frame is a megabyte or two of base64). */
  maxBytes: number;
  /** How long an event is kept: replay is for a dropped connection, not for history. */
  maxAgeMs: number;
  /**
   * Bytes kept by all sessions' stores together, shared evenly: each keeps at most this over the
   * number of sessions open (`sessions`), when that is less than `maxBytes`. At 512 sessions of
   * 8 MiB the server would have held 4 GiB of replay.
   */
  totalBytes?: number;
  sessions?: () => number;
}

export const EVENT_STORE_LIMITS: EventStoreLimits = { maxEvents: 500, maxBytes: 8 * 1024 * 1024, maxAgeMs: 5 * 60_000, totalBytes: 512 * 1024 * 1024 };

interface Stored {
  id: string;
  streamId: string;
  message: JSONRPCMessage;
  bytes: number;
  atMs: number;
}

export class BoundedEventStore implements EventStore {
  readonly #limits: EventStoreLimits;
  readonly #now: () => number;
  /** Oldest first. */
  #events: Stored[] = [];
  readonly #byId = new Map<string, Stored>();
  #bytes = 0;
  #seq = 0;

  constructor(limits: EventStoreLimits = EVENT_STORE_LIMITS, now: () => number = Date.now) {
    this.#limits = limits;
    this.#now = now;
  }

  get size(): number {
    return this.#events.length;
  }

  get bytes(): number {
    return this.#bytes;
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = `${++this.#seq}`;
    const bytes = JSON.stringify(message).length;
    const e: Stored = { id, streamId, message, bytes, atMs: this.#now() };
    this.#events.push(e);
    this.#byId.set(id, e);
    this.#bytes += bytes;
    this.#evict();
    return id;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    this.#evict();
    return this.#byId.get(eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    this.#evict();
    const last = this.#byId.get(lastEventId);
    // The SDK asks getStreamIdForEventId first and refuses an unknown id; this is for a caller
    // that does not.
    if (!last) throw new Error(`event ${lastEventId.slice(0, 40)} is not kept (too old, or never sent)`);
    const after = this.#events.slice(this.#events.indexOf(last) + 1).filter((e) => e.streamId === last.streamId);
    for (const e of after) {
      // A priming event (the SDK stores `{}` to hand the client its first id) carries nothing.
      if (!("jsonrpc" in e.message)) continue;
      await send(e.id, e.message);
    }
    return last.streamId;
  }

  /** Drops the oldest events past a limit (the newest stays, however large, until it is too old). */
  #evict() {
    const { maxEvents, maxAgeMs, totalBytes, sessions } = this.#limits;
    const maxBytes = totalBytes && sessions ? Math.min(this.#limits.maxBytes, totalBytes / Math.max(1, sessions())) : this.#limits.maxBytes;
    const oldest = this.#now() - maxAgeMs;
    const n = this.#events.length;
    let drop = 0;
    while (drop < n) {
      const e = this.#events[drop]!;
      const over = drop < n - 1 && (n - drop > maxEvents || this.#bytes > maxBytes);
      if (!over && e.atMs >= oldest) break;
      this.#bytes -= e.bytes;
      this.#byId.delete(e.id);
      drop++;
    }
    if (drop) this.#events = this.#events.slice(drop);
  }
}
