import type { HolmEvent } from "~/models/event.server";
import type { TraceEntry, TracePage } from "~/models/trace.server";
import { sleep } from "./boxes";
import { type HolmClient, seg } from "./holm-client";

// The trace of a box and the events of the workspace (000: History, Events). Neither streams:
// both are pages read with `after` (`next` of the last page), so following one is reading the
// next page again until the caller stops (an AbortSignal). Events show "about two seconds after
// [they happen]" (000); the trace at once.

export type { HolmEvent, TraceEntry, TracePage };

export interface EventsPage {
  events: HolmEvent[];
  next: number;
  more: boolean;
}

export interface FollowOptions {
  /** Start after this seq (the trace: -1 reads from the start; events: 0). */
  after?: number;
  /** Wait between reads when there was nothing new. */
  intervalMs?: number;
  signal?: AbortSignal;
}

export class TraceApi {
  constructor(private readonly c: HolmClient) {}

  /** One page: entries with seq > `after` (at most `limit`, ≤ 500); `next` is null at the end. */
  read(id: string, q: { after?: number; limit?: number } = {}, signal?: AbortSignal): Promise<TracePage> {
    return this.c.request<TracePage>("GET", `/v1/boxes/${seg(id)}/trace`, { query: q, signal });
  }

  /** Every entry after `after`, page by page. */
  async all(id: string, after = -1): Promise<TraceEntry[]> {
    const out: TraceEntry[] = [];
    for (let cur: number | null = after; cur !== null; ) {
      const page = await this.read(id, { after: cur, limit: 500 });
      out.push(...page.entries);
      cur = page.next;
    }
    return out;
  }

  /** Entries as they are recorded, from `after`, until `signal` aborts (then it returns). */
  async *follow(id: string, opts: FollowOptions = {}): AsyncGenerator<TraceEntry> {
    let after = opts.after ?? -1;
    while (!opts.signal?.aborted) {
      const page = await aborted(this.read(id, { after, limit: 500 }, opts.signal), opts.signal);
      if (!page) return;
      for (const e of page.entries) yield e;
      if (page.entries.length) after = page.entries[page.entries.length - 1]!.seq;
      if (page.next === null && !(await nap(opts.intervalMs ?? 500, opts.signal))) return;
    }
  }

  /** `GET …/trace/frames/{hash}`: the PNG. */
  async frame(id: string, hash: string): Promise<Uint8Array> {
    const res = await this.c.raw("GET", `/v1/boxes/${seg(id)}/trace/frames/${seg(hash)}`);
    return new Uint8Array(await res.arrayBuffer());
  }
}

export class EventsApi {
  constructor(private readonly c: HolmClient) {}

  list(q: { after?: number; limit?: number } = {}, signal?: AbortSignal): Promise<EventsPage> {
    return this.c.request<EventsPage>("GET", "/v1/events", { query: q, signal });
  }

  /** Events as they come (read again every `intervalMs`, 1 s by default), until `signal` aborts. */
  async *follow(opts: FollowOptions = {}): AsyncGenerator<HolmEvent> {
    let after = opts.after ?? 0;
    while (!opts.signal?.aborted) {
      const page = await aborted(this.list({ after, limit: 1000 }, opts.signal), opts.signal);
      if (!page) return;
      for (const e of page.events) yield e;
      after = page.next;
      if (!page.more && !(await nap(opts.intervalMs ?? 1000, opts.signal))) return;
    }
  }
}

/** The promise's value, or undefined when `signal` aborted it (a follow ends quietly). */
async function aborted<T>(p: Promise<T>, signal?: AbortSignal): Promise<T | undefined> {
  try {
    return await p;
  } catch (e) {
    if (signal?.aborted) return undefined;
    throw e;
  }
}

/** Waits; false when `signal` aborted the wait. */
async function nap(ms: number, signal?: AbortSignal): Promise<boolean> {
  return (await aborted(sleep(ms, signal).then(() => true), signal)) === true;
}
