import { agentCall } from "~/protocol/agent";
import type { DirectInputs } from "~/protocol/direct-viewer";
import { db } from "~/utils/db.server";
import { log } from "~/utils/log.server";
import { principalAccess } from "./access.server";
import type { Actor } from "./actor";
import { requireRunningBox, touchBox } from "./box.server";
import { type PrincipalChange, concerns } from "./principal-changes.server";
import { callAgent } from "./screen.server";
import { reportViewerInput } from "./viewer.server";

// Revocation reaches direct viewer sockets too (ADR 0029): they run in the box, so when a key is
// revoked, a member removed or demoted, or a person's sessions end, the server asks each running
// box with direct sockets who is connected, checks those the change concerns against the store,
// and has the box close the ones whose access is gone (4401), or only their control (4403), and
// refuse their tickets signed before then.

const SERVER: Actor = { kind: "server" };

interface DirectViewer {
  screen: number;
  mode: "view" | "control";
  issuer: string;
}

/** The boxes that serve direct control sockets (policy.auth token) and may have some open. */
async function tokenBoxes(states: string[]): Promise<{ id: string; owner: string | null }[]> {
  const rows = await db()
    .selectFrom("box")
    .select(["id", "owner", "spec_json"])
    .where("state", "in", states)
    .where("removed_at_ms", "is", null)
    .execute();
  return rows.filter((r) => (JSON.parse(r.spec_json) as { policy?: { auth?: string } }).policy?.auth === "token");
}

export async function recheckDirectViewers(change: PrincipalChange): Promise<void> {
  const boxes = await tokenBoxes(["ready", "paused"]);
  await Promise.all(
    boxes.map((r) =>
      recheckBox(r.id, r.owner, change).catch((err) => log.error({ err, box: r.id }, "rechecking a box's direct viewer sockets failed")),
    ),
  );
}

/**
 * Takes the input that came in on each box's direct control sockets into the trace, as the relay
 * reports its own (app/models/takeover.server.ts records it, coarsely): the box cannot reach the
 * server, so the server asks (every few seconds, server/loops.ts). Returns how many were taken.
 */
export async function collectDirectInput(): Promise<number> {
  let n = 0;
  for (const r of await tokenBoxes(["ready"])) {
    try {
      const box = await requireRunningBox(SERVER, r.id, AbortSignal.timeout(2000));
      const got = await callAgent<DirectInputs>(box, agentCall("directViewerInputs", {}), {}, 5000);
      if (got.dropped) log.warn({ box: r.id, dropped: got.dropped }, "direct viewer input was dropped before the server took it");
      for (const i of got.inputs) reportViewerInput({ boxId: r.id, screen: i.screen, issuer: i.issuer, kind: i.kind, detail: i.detail });
      if (got.inputs.length) await touchBox(r.id);
      n += got.inputs.length;
    } catch (err) {
      log.warn({ err, box: r.id }, "taking a box's direct viewer input failed");
    }
  }
  return n;
}

async function recheckBox(id: string, owner: string | null, change: PrincipalChange): Promise<void> {
  const box = await requireRunningBox(SERVER, id, AbortSignal.timeout(5000));
  const { viewers } = await callAgent<{ viewers: DirectViewer[] }>(box, agentCall("directViewers", {}));
  // Those connected, and the key or person the change names even when not connected: the box
  // then also refuses their tickets signed before now.
  const named = change.kind === "key" ? `key:${change.keyId}` : change.kind === "member" || change.userId ? `user:${change.userId}` : undefined;
  const issuers = new Set([...viewers.filter((v) => concerns(change, v.issuer)).map((v) => v.issuer), ...(named ? [named] : [])]);
  for (const issuer of issuers) {
    const watch = await principalAccess(issuer, owner, "viewer");
    if (!watch.ok) {
      await callAgent(box, agentCall("directViewersClose", {}), { issuer, control_only: false, reason: watch.why });
      continue;
    }
    const drive = await principalAccess(issuer, owner, "member");
    if (!drive.ok) await callAgent(box, agentCall("directViewersClose", {}), { issuer, control_only: true, reason: drive.why });
  }
}

/**
 * The direct sockets open on one screen of a box that serves them (the box is asked): they count
 * in `GET …/viewers` beside the relay's. Zero when the box does not answer.
 */
export async function directViewerCounts(boxId: string, screen: number): Promise<{ watching: number; driving: number; people: number }> {
  try {
    const box = await requireRunningBox(SERVER, boxId, AbortSignal.timeout(2000));
    const { viewers } = await callAgent<{ viewers: DirectViewer[] }>(box, agentCall("directViewers", {}), undefined, 2000);
    const here = viewers.filter((v) => v.screen === screen);
    const drivers = here.filter((v) => v.mode === "control");
    return { watching: here.length, driving: drivers.length, people: drivers.filter((v) => v.issuer.startsWith("user:")).length };
  } catch (err) {
    log.warn({ err, box: boxId }, "counting a box's direct viewer sockets failed");
    return { watching: 0, driving: 0, people: 0 };
  }
}
