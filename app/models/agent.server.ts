import { derive } from "~/utils/secret.server";
import { ApiError } from "~/utils/api-error.server";

// How the server talks to the agent inside a box: HTTP on the box's bridge address with a
// per-box secret derived from the server key (so nothing is stored and a restarted server
// still gets in).

export const AGENT_PORT = 7070;

export function agentSecret(boxId: string): string {
  return derive(`agent:${boxId}`);
}

export interface ScreenHealth {
  screen: number;
  display: string;
  x: boolean;
  vnc: boolean;
  cdp: boolean;
}

export interface AgentHealth {
  ok: boolean;
  screens: ScreenHealth[];
}

/** One health probe; undefined when the agent does not answer at all. */
export async function probeHealth(address: string, timeoutMs = 1000): Promise<AgentHealth | undefined> {
  try {
    const res = await fetch(`http://${address}:${AGENT_PORT}/health`, { signal: AbortSignal.timeout(timeoutMs) });
    const body = (await res.json()) as AgentHealth;
    return body;
  } catch {
    return undefined;
  }
}

export function allUp(h: AgentHealth | undefined, screens: number): boolean {
  if (!h?.ok || !Array.isArray(h.screens) || h.screens.length < screens) return false;
  return h.screens.every((s) => s.x && s.vnc && s.cdp);
}

/** Calls the agent with the box's secret. Errors become `transport`/`timeout` ApiErrors. */
export async function agentFetch(
  boxId: string,
  address: string,
  path: string,
  init: RequestInit & { timeoutMs?: number } = {},
): Promise<Response> {
  const { timeoutMs = 60_000, ...rest } = init;
  const headers = new Headers(rest.headers);
  headers.set("authorization", `Bearer ${agentSecret(boxId)}`);
  try {
    return await fetch(`http://${address}:${AGENT_PORT}${path}`, {
      ...rest,
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
