import { agentCall } from "~/protocol/agent";
import { ApiError } from "~/utils/api-error.server";
import { clustered } from "~/utils/cluster.server";
import { log } from "~/utils/log.server";
import { agentRequest } from "./agent-http.server";
import { type BoxRow, KEY_REFUSED, boxAddress, forgetAddress, loadRow, removeRow, requireSettled, setStateIf, trace } from "./box-record.server";
import { recordEvent } from "./event.server";

// A box whose own agent refuses what this server signs. Agent secrets are derived from the server
// key (agent.server.ts), so a server started with another key (a store restored from a
// `holm backup --no-key` archive, another HOLM_SECRET_KEY) or an agent given another secret can
// never reach the box again: no retry helps, and the box is `failed` (seed 000: it refuses calls
// with 409 and stays until deleted), not `unreachable` (seed 002: the runtime is away and the box
// comes back with it; here the runtime answers and nothing comes back).
//
// Only the refusal "bad signature" counts, and only from the agent at the address the runtime
// gives for the box now: "no secret yet" (an agent still booting), a stale timestamp, a timeout
// or a refused connection are passing, and another box's agent answering at a stale address
// refuses too, which is why the address is asked for again first (recheckBox in box-sync).

const PROBE_MS = 3_000;

/**
 * What the agent at `address` makes of a request this server signs for box `id` (a cheap signed
 * route): "refused" for a bad signature, "accepted", or undefined when there is no answer to go by.
 */
export async function keyVerdict(id: string, address: string): Promise<"refused" | "accepted" | undefined> {
  const { method, path } = agentCall("directViewers", {});
  try {
    const a = await agentRequest(id, address, method, path, undefined, PROBE_MS, 64 * 1024);
    if (a.status !== 401) return a.status < 500 ? "accepted" : undefined;
    return isBadSignature(a.body.toString("utf8")) ? "refused" : undefined;
  } catch {
    return undefined;
  }
}

/** Whether an agent's 401 (its JSON body or message) says the signature itself is wrong. */
export function isBadSignature(message: string): boolean {
  return /\bbad signature\b/.test(message);
}

/**
 * Checks a `ready` box's agent with this server's key; one that refuses it is failed (with why,
 * a trace entry and a `box.failed` event), a pool box removed. Returns whether it was. Not with
 * several servers (keyRefusedError). Conditional on the row still being `ready` rather than in
 * the box's serial chain: a call may come here from inside that chain (a stop's last steps), and
 * a pause or removal meanwhile wins anyway.
 */
export async function failIfKeyRefused(row: BoxRow): Promise<boolean> {
  if (clustered() || !(await refusesOurKey(row))) return false;
  // A pool box is no one's to delete (pool.server.ts): it goes rather than stay failed.
  if (row.pooled) return (await removeRow(row, "pool: its agent refuses this server's signature (another server key)"), true);
  if (!(await setStateIf(row, "ready", "failed", KEY_REFUSED))) return false;
  forgetAddress(row.id);
  log.warn({ box: row.id }, "the box's agent refuses this server's signature: failed");
  await trace(row.id, "failed", { why: KEY_REFUSED });
  await recordEvent("box.failed", { owner: row.owner, box_id: row.id, runtime: row.runtime, data: { why: KEY_REFUSED } });
  return true;
}

async function refusesOurKey(row: BoxRow): Promise<boolean> {
  if (row.state !== "ready" || row.removed_at_ms !== null) return false;
  const address = await boxAddress(row.id);
  return !!address && (await keyVerdict(row.id, address)) === "refused";
}

/**
 * After a call to box `id`'s agent was refused with "bad signature" and the runtime was asked
 * again for its state and address: the 409 to answer when the box's own agent refuses this
 * server's key (the box is failed now), else undefined (another agent was at a stale address).
 */
export async function keyRefusedError(id: string): Promise<ApiError | undefined> {
  const row = await loadRow(id);
  if (!row) return undefined;
  // Servers sharing a store share one key (README, "Several servers"): a refusal then says this
  // server's key is wrong, not the box, and the box is not failed for the servers that can reach it.
  if (clustered()) {
    if (!(await refusesOurKey(row))) return undefined;
    return new ApiError("transport", `box ${id}'s agent refuses this server's signature: this server's key is not the one that launched it; give every server the same HOLM_SECRET_KEY`, { retryable: false });
  }
  if (row.state === "ready" && !(await failIfKeyRefused(row))) return undefined;
  if (row.state !== "failed" || row.reason !== KEY_REFUSED) return undefined;
  try {
    requireSettled(row);
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  return undefined;
}
