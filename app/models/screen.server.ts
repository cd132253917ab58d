import { z } from "zod";
import { WindowRef } from "~/protocol/action-fields";
import { type AgentCall, agentCall } from "~/protocol/agent";
import { ApiError, ERROR_STATUS, type ErrorCode, badRequest, isApiError, notFound } from "~/utils/api-error.server";
import { validate } from "~/utils/validate.server";
import type { Actor } from "./actor";
import { AGENT_ANSWER_MAX, AGENT_BULK_MAX } from "./agent.server";
import { agentRequest } from "./agent-http.server";
import { type RunningBox, requireRunningBox } from "./box.server";
import { isBadSignature, keyRefusedError } from "./box-key.server";
import { stoppedError } from "./box-sync.server";
import { log } from "~/utils/log.server";

// Everything that reaches into a running box goes through here: one place that checks the box
// and screen, calls the in-box agent with the box's secret, and turns the agent's errors into
// the /v1 error shape.

export interface ScreenTarget {
  box: RunningBox;
  screen: number;
}

export function parseScreen(raw: string, box: { id: string; screens: number }): number {
  if (!/^[0-9]{1,2}$/.test(raw)) throw badRequest(`screen must be a number from 0; got "${raw}"`);
  const n = Number(raw);
  if (n >= box.screens) {
    throw notFound(`box ${box.id} has ${box.screens} screen${box.screens === 1 ? "" : "s"} (0–${box.screens - 1}); no screen ${n}`);
  }
  return n;
}

export async function requireScreen(actor: Actor, id: string, screenRaw: string, signal?: AbortSignal): Promise<ScreenTarget> {
  if (!/^[0-9]{1,2}$/.test(screenRaw)) throw badRequest(`screen must be a number from 0; got "${screenRaw}"`);
  const box = await requireRunningBox(actor, id, signal);
  return { box, screen: parseScreen(screenRaw, box) };
}

/**
 * A call to the agent failed the way a box that went away does. The runtime is asked now: a box
 * that stopped on its own (Chromium died, say) is recorded so (box-sync.server.ts) and the call
 * answers 409 with its state and reason. Otherwise `err` stands (the box's address is asked
 * again on the next call), and a refused signature is a retryable `transport` error, not a 500
 * (unless the box's own agent refuses this server's key: callAgent).
 */
async function explainAgentFailure(id: string, err: ApiError): Promise<never> {
  throw (await stoppedError(id)) ?? err;
}

const AgentErrorSchema = z.object({ code: z.string(), message: z.string() });

/**
 * Calls the agent and returns its JSON, or throws the agent's refusal as an ApiError. Answers
 * are read up to `maxBytes` (AGENT_ANSWER_MAX; `"bulk"` for calls that carry files, frames or
 * command output).
 */
export async function callAgent<T = Record<string, unknown>>(
  box: RunningBox,
  { method, path }: AgentCall,
  body?: unknown,
  timeoutMs = 60_000,
  maxBytes: number | "bulk" = AGENT_ANSWER_MAX,
): Promise<T> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  let res: Awaited<ReturnType<typeof agentRequest>>;
  try {
    res = await agentRequest(box.id, box.address, method, path, payload, timeoutMs, maxBytes === "bulk" ? AGENT_BULK_MAX : maxBytes);
  } catch (err) {
    if (isApiError(err) && (err.code === "timeout" || (err.code === "transport" && err.retryable))) await explainAgentFailure(box.id, err);
    throw err;
  }
  const text = res.body.toString("utf8");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ApiError("transport", `the box answered ${res.status} with something that is not JSON`);
  }
  if (res.status >= 200 && res.status < 300) return parsed as T;
  const err = AgentErrorSchema.safeParse(parsed);
  if (!err.success) throw new ApiError("transport", `the box answered ${res.status}`);
  // The agent refused the signature: this address is not (or no longer) this box's agent, or
  // (a bad signature from the agent at the box's address as the runtime gives it now) the box's
  // own agent refuses this server's key, which no retry changes: then the box is failed (box-key).
  if (res.status === 401) {
    const passing = new ApiError("transport", `the agent at the box's address refused the server's signature (${err.data.message}); try again`, { retryable: true });
    const stopped = await stoppedError(box.id);
    throw stopped ?? (isBadSignature(err.data.message) ? await keyRefusedError(box.id) : undefined) ?? passing;
  }
  const code = (err.data.code in ERROR_STATUS && err.data.code !== "unauthorized" ? err.data.code : "internal") as ErrorCode;
  if (code === "internal") log.error(`agent of ${box.id} failed: ${err.data.message}`);
  throw new ApiError(code, err.data.message);
}

export const FrameQuerySchema = z.strictObject({
  have: z.string().max(128).optional(),
  window: WindowRef.optional(),
  x: z.coerce.number().int().min(0).optional(),
  y: z.coerce.number().int().min(0).optional(),
  width: z.coerce.number().int().min(1).optional(),
  height: z.coerce.number().int().min(1).optional(),
  scale: z.coerce.number().int().min(1).max(400).optional(),
  pointer: z.enum(["true", "false"]).optional(),
});

export async function frame(t: ScreenTarget, raw: Record<string, string>) {
  const q = validate(FrameQuerySchema, raw, "query");
  const region = [q.x, q.y, q.width, q.height].filter((v) => v !== undefined).length;
  if (region !== 0 && region !== 4) throw badRequest("a region needs all of x, y, width and height");
  return callAgent(t.box, agentCall("frame", { n: t.screen }, q), undefined, 60_000, "bulk");
}
