import { AsyncLocalStorage } from "node:async_hooks";

// How long a call waits for a paused box to resume (seed 002: calls to a paused box wait, they
// do not fail). Ten minutes unless the caller asked for less: a /v1 request with RFC 7240's
// `Prefer: wait=N` (app/edge/route.server.ts), which the MCP tools send, because an MCP client
// gives up on its own (the SDK's default request timeout is 60 s) and would never see the answer.

const PAUSED_WAIT_MS = 10 * 60_000;

const preferred = new AsyncLocalStorage<number>();

/** Runs `fn` (a /v1 handler) with calls on a paused box waiting at most `ms` (none: the default). */
export function withPausedWait<T>(ms: number | undefined, fn: () => T): T {
  return ms === undefined ? fn() : preferred.run(Math.min(ms, PAUSED_WAIT_MS), fn);
}

/**
 * Runs `fn` outside any call's preference: work a call starts and does not wait for (a queued
 * launch, a fork's replay) carries the call's async context into its timers and promises, and
 * would otherwise wait for a paused box as briefly as the call asked (50 s for an MCP fork).
 */
export function detached<T>(fn: () => T): T {
  return preferred.exit(fn);
}

/** The wait of the call being served. */
export function pausedWaitMs(): number {
  return preferred.getStore() ?? PAUSED_WAIT_MS;
}

/** `Prefer: wait=N` (seconds, RFC 7240 §4.3) in milliseconds; anything else is no preference. */
export function preferredWaitMs(request: Request): number | undefined {
  const m = /(?:^|[,;\s])wait\s*=\s*"?(\d{1,6})"?(?:$|[,;\s])/i.exec(request.headers.get("prefer") ?? "");
  return m ? Number(m[1]) * 1000 : undefined;
}

/** The `timeout` message of a call that waited its limit for a paused box: what to do next. */
export function stillPaused(id: string, limitMs: number): string {
  return `box ${id} is still paused after ${Math.round(limitMs / 1000)} s; resume it (resume_box, POST /v1/boxes/${id}/resume) or call again`;
}
