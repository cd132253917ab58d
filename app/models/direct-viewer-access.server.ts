import { z } from "zod";
import { agentCall } from "~/protocol/agent";
import type { DirectInput, DirectInputs } from "~/protocol/direct-viewer";
import { db } from "~/utils/db.server";
import { log } from "~/utils/log.server";
import { principalAccess } from "./access.server";
import type { Actor } from "./actor";
import { requireRunningBox, touchBox } from "./box.server";
import { onBoxResumed } from "./box-resumed.server";
import { changePassword, passwordEpoch, passwordHolders } from "./direct-password.server";
import { directTicketHolders } from "./direct-ticket-holders.server";
import { type PrincipalChange, concerns } from "./principal-changes.server";
import { callAgent } from "./screen.server";
import { directViewerBoxes, noteDirectViewers, reportViewerInput } from "./viewer.server";

// Revocation reaches direct viewer sockets too (ADR 0029): they run in the box, so when a key is
// revoked, a member removed or demoted, or a person's sessions end, the server asks each running
// box with direct sockets who is connected, checks those the change concerns against the store,
// and has the box close the ones whose access is gone (4401), or only their control (4403), and
// refuse their tickets signed before then. A password names no one, so a password box whose
// password was given to someone who lost access gets a new one (its sockets open with the old
// one close, and viewers who kept access ask for the new one).

const SERVER: Actor = { kind: "server" };

interface DirectViewer {
  screen: number;
  mode: "view" | "control";
  issuer: string;
}

/** The boxes with direct sockets of `auth` (token: control too; password: watching only). */
async function boxesWithAuth(auth: "token" | "password", states: string[]): Promise<{ id: string; owner: string | null; state: string }[]> {
  const rows = await db()
    .selectFrom("box")
    .select(["id", "owner", "spec_json", "state"])
    .where("state", "in", states)
    .where("removed_at_ms", "is", null)
    .execute();
  return rows.filter((r) => (JSON.parse(r.spec_json) as { policy?: { auth?: string } }).policy?.auth === auth);
}

const tokenBoxes = (states: string[]) => boxesWithAuth("token", states);

/**
 * Password boxes whose password someone the change concerns was given and no longer may watch:
 * a new password, told to the box if it runs (or when it runs again).
 */
async function changePasswords(change: PrincipalChange): Promise<void> {
  const boxes = await boxesWithAuth("password", ["starting", "ready", "paused", "stopped", "unreachable"]);
  for (const r of boxes) {
    let gone = false;
    for (const issuer of await passwordHolders(r.id)) {
      if (concerns(change, issuer) && !(await principalAccess(issuer, r.owner, "viewer")).ok) gone = true;
    }
    if (!gone) continue;
    const epoch = await changePassword(r.id);
    log.info({ box: r.id, epoch }, "a box's viewer password changed: someone given it lost access");
    if (r.state !== "ready") {
      unreached.add(r.id);
      continue;
    }
    await tellPassword(r.id).catch((err) => {
      unreached.add(r.id);
      log.error({ err, box: r.id }, "telling a box its new viewer password failed; told again once it answers");
    });
  }
}

/** Tells a running password box its current password epoch. */
async function tellPassword(id: string): Promise<void> {
  const epoch = await passwordEpoch(id);
  if (epoch === 0) return;
  const box = await requireRunningBox(SERVER, id, AbortSignal.timeout(5000));
  await callAgent(box, agentCall("directViewersPassword", {}), { epoch });
}

export async function recheckDirectViewers(change: PrincipalChange): Promise<void> {
  const boxes = await tokenBoxes(["ready", "paused"]);
  await changePasswords(change).catch((err) => log.error({ err }, "changing password boxes' viewer passwords failed"));
  await Promise.all(
    boxes.map((r) =>
      recheckIssuers(r.id, r.owner, (viewers) => changedIssuers(change, viewers)).catch((err) => {
        // Frozen, or not answering: it is checked in full once it runs again (resume, or the loop).
        unreached.add(r.id);
        log.error({ err, box: r.id }, "rechecking a box's direct viewer sockets failed; checked again once it answers");
      }),
    ),
  );
}

/** Boxes an access change could not reach: each is checked in full once it answers. */
const unreached = new Set<string>();

/**
 * Every issuer connected to the box or holding an unexpired ticket for it, checked against the
 * store: a box that was paused or stopped when access changed (or restarted its agent, which
 * forgets) refuses the tickets and closes the sockets of those whose access is gone.
 */
async function recheckHolders(id: string): Promise<void> {
  const row = await db().selectFrom("box").select(["owner", "spec_json"]).where("id", "=", id).executeTakeFirst();
  const auth = row && (JSON.parse(row.spec_json) as { policy?: { auth?: string } }).policy?.auth;
  // A password box's agent starts at epoch 0 after a stop: it is told the current one.
  if (auth === "password") {
    await tellPassword(id);
    unreached.delete(id);
    return;
  }
  if (!row || auth !== "token") return;
  const held = await directTicketHolders(id);
  await recheckIssuers(id, row.owner, (viewers) => new Set([...viewers.map((v) => v.issuer), ...held]));
  unreached.delete(id);
}

onBoxResumed(recheckHolders);

/** Checks again the boxes an access change could not reach, once they run. */
export async function recheckUnreached(): Promise<void> {
  if (!unreached.size) return;
  const ready = await db().selectFrom("box").select("id").where("id", "in", [...unreached]).where("state", "=", "ready").execute();
  for (const { id } of ready) await recheckHolders(id).catch((err) => log.warn({ err, box: id }, "rechecking a box's direct viewers failed"));
}

/**
 * Takes the input that came in on each box's direct control sockets into the trace, as the relay
 * reports its own (app/models/takeover.server.ts records it, coarsely): the box cannot reach the
 * server, so the server asks (every few seconds, server/loops.ts). Returns how many were taken.
 */
export async function collectDirectInput(): Promise<number> {
  let n = 0;
  const running = await tokenBoxes(["ready"]);
  // Counts of boxes no longer running (or gone) are dropped: the box page shows 0 for them.
  const polled = new Set(running.map((r) => r.id));
  for (const id of directViewerBoxes()) if (!polled.has(id)) noteDirectViewers(id, null);
  for (const r of running) {
    try {
      const box = await requireRunningBox(SERVER, r.id, AbortSignal.timeout(2000));
      const got = await callAgent<DirectInputs>(box, agentCall("directViewerInputs", {}), {}, 5000);
      if (got.dropped) log.warn({ box: r.id, dropped: got.dropped }, "direct viewer input was dropped before the server took it");
      const inputs = await vouchedInputs(r.id, box.screens, got.inputs);
      for (const i of inputs) reportViewerInput({ boxId: r.id, screen: i.screen, issuer: i.issuer, kind: i.kind, detail: i.detail });
      if (got.inputs.length) await touchBox(r.id);
      // The box page counts the direct sockets too (an agent from before this answered no list).
      if (got.viewers) noteDirectViewers(r.id, got.viewers);
      n += got.inputs.length;
    } catch (err) {
      log.warn({ err, box: r.id }, "taking a box's direct viewer input failed");
    }
  }
  return n;
}

const DirectInputSchema = z.object({
  screen: z.number().int().min(0),
  issuer: z.string().max(300),
  kind: z.enum(["pointer", "key", "cut"]),
  detail: z.record(z.string(), z.number()),
});

/** A ticket's socket may have sent input just before the ticket expired: the box is asked every few seconds. */
const INPUT_AFTER_EXPIRY_MS = 60_000;

/**
 * The input a box reports that the trace may name a person for: well formed, on one of its
 * screens, and from an issuer this server signed a ticket for. The box names the issuer, and root
 * in the box can sign tickets of its own with its secret (docs/security.md): it drives its own
 * box, but its input is no person's in the trace.
 */
async function vouchedInputs(boxId: string, screens: number, inputs: unknown): Promise<Omit<DirectInput, "at_ms">[]> {
  if (!Array.isArray(inputs) || inputs.length === 0) return [];
  const holders = new Set(await directTicketHolders(boxId, INPUT_AFTER_EXPIRY_MS));
  const out: Omit<DirectInput, "at_ms">[] = [];
  let refused = 0;
  for (const raw of inputs) {
    const i = DirectInputSchema.safeParse(raw);
    if (i.success && i.data.screen < screens && holders.has(i.data.issuer)) out.push(i.data);
    else refused++;
  }
  if (refused) log.warn({ box: boxId, refused }, "a box reported direct viewer input the server gave no ticket for, or malformed: not in the trace");
  return out;
}

/** Those connected whom the change may concern, and the key or person it names even when not connected. */
function changedIssuers(change: PrincipalChange, viewers: DirectViewer[]): Set<string> {
  const named = change.kind === "key" ? `key:${change.keyId}` : change.kind === "member" || change.userId ? `user:${change.userId}` : undefined;
  return new Set([...viewers.filter((v) => concerns(change, v.issuer)).map((v) => v.issuer), ...(named ? [named] : [])]);
}

/** Closes (4401, or 4403 for control alone) and refuses the tickets signed until now of each picked issuer whose access is gone. */
async function recheckIssuers(id: string, owner: string | null, pick: (viewers: DirectViewer[]) => Set<string>): Promise<void> {
  const box = await requireRunningBox(SERVER, id, AbortSignal.timeout(5000));
  const { viewers } = await callAgent<{ viewers: DirectViewer[] }>(box, agentCall("directViewers", {}));
  for (const issuer of pick(viewers)) {
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
