import { EventEmitter } from "node:events";
import { BOX_STEPS, changesScreen } from "~/protocol/actions";
import { agentCall } from "~/protocol/agent";
import { VIEWER_CLOSE } from "~/protocol/viewer-socket";
import { ApiError } from "~/utils/api-error.server";
import { env, publicUrl } from "~/utils/env.server";
import { principalAccess } from "./access.server";
import type { Step } from "./action-schema.server";
import { type Actor, issuerOf } from "./actor";
import { SERVER_ITSELF, attribution, issuerName } from "./actor-name.server";
import { type BoxJson, boxChanges, getBox, requireRunningBox } from "./box.server";
import { recordEvent } from "./event.server";
import { onPrincipalChange } from "./principal-changes.server";
import { sampleSoon } from "./recorder.server";
import { atLeast } from "./roles";
import { type ScreenTarget, callAgent } from "./screen.server";
import { recordEntry } from "./trace.server";
import { closeViewers, onViewerInput, onViewersChange, viewers } from "./viewer.server";

// Who has each screen. Held in this process only (one copy: docs/decisions/0002): a restart
// gives every screen back, so a takeover can never outlive the server either.
//
// Hands off (docs/security.md): while a screen is held exclusively, nothing but its
// holder changes it. The agent (an API key, the server token) gets 409 `denied`, retryable, for
// every write that reaches the screen: input, exec and file writes (box-wide: they reach every
// screen), setting the clipboard, windows, lifecycle, control tickets and control sockets; its
// open control sockets are closed. Reads go on (frames, the clipboard, files, trace, watching).
// A person's takeover ends by that person, an owner or admin of the workspace, or the grace
// timer; never by a key or the server token. One the agent asked for through /v1 is the agent's
// to end.

export interface Takeover {
  boxId: string;
  owner: string | null;
  screen: number;
  /** `user:<id>`, `key:<id>` or `server`: whose control sockets keep it alive. */
  by: string;
  exclusive: boolean;
  since_ms: number;
}

const held = new Map<string, Takeover>();
const guardRefresh = new Map<string, NodeJS.Timeout>();
const samplers = new Map<string, NodeJS.Timeout>();
// While a person holds a screen the server cannot see their input, so it looks about once a
// second and records a frame when something changed.
const SAMPLE_EVERY_MS = 1000;
// The agent's input guard lapses by itself unless refreshed, so a server that dies mid-takeover
// cannot leave a box refusing its agent for long.
const GUARD_TTL_MS = 90_000;
const GUARD_EVERY_MS = 30_000;
const graceTimers = new Map<string, NodeJS.Timeout>();
export const takeoverChanges = new EventEmitter();
takeoverChanges.setMaxListeners(0);

const keyOf = (boxId: string, screen: number) => `${boxId}/${screen}`;

export function takeoverOf(boxId: string, screen: number): Takeover | undefined {
  return held.get(keyOf(boxId, screen));
}

function graceMs(): number {
  return env().HOLM_TAKEOVER_GRACE_SECS * 1000;
}

/**
 * Whether `issuer` may change a screen `t` holds. A person's exclusive takeover is that
 * person's alone. One the agent asked for through /v1 hands the screen to the people of the
 * console: any person drives, no key or server token does (the agent asked to wait).
 */
export function mayDrive(t: Takeover | undefined, issuer: string): boolean {
  if (!t?.exclusive) return true;
  if (t.by.startsWith("user:")) return issuer === t.by;
  return issuer.startsWith("user:");
}


const refused = (message: string) => new ApiError("denied", message, { retryable: true });

/** The takeover on `boxId` that keeps `issuer` off it: of `screen`, or of any screen (box-wide). */
function heldAgainst(issuer: string, boxId: string, screen?: number): Takeover | undefined {
  if (screen !== undefined) {
    const t = takeoverOf(boxId, screen);
    return mayDrive(t, issuer) ? undefined : t;
  }
  for (const t of held.values()) if (t.boxId === boxId && !mayDrive(t, issuer)) return t;
  return undefined;
}

/** Why control of the screen is not `issuer`'s now, or undefined when it is (tickets, sockets). */
export function controlRefusal(issuer: string, boxId: string, screen: number): string | undefined {
  const t = heldAgainst(issuer, boxId, screen);
  return t ? `a person has control of screen ${screen}; you may watch, and control once it is given back` : undefined;
}

/** Refuses a write to one screen (input routes, the clipboard) while someone else holds it. */
export function assertMayDrive(actor: Actor, boxId: string, screen: number, what: string) {
  if (heldAgainst(issuerOf(actor), boxId, screen)) {
    throw refused(`a person has control of screen ${screen}; ${what} waits until it is given back`);
  }
}

/** Refuses a box-wide write (exec, files, apps, lifecycle) while someone else holds any screen. */
export function assertMayWriteBox(actor: Actor, boxId: string, what: string) {
  const t = heldAgainst(issuerOf(actor), boxId);
  if (t) {
    throw refused(
      `a person has control of screen ${t.screen} of this box; ${what} reaches every screen, so it waits until the screen is given back`,
    );
  }
}

/**
 * For the agent's lifecycle routes (pause, stop, remove): the box must be one the actor sees
 * (so a refusal tells a stranger nothing), and no screen of it held against the actor.
 */
export async function assertMayChangeBox(actor: Actor, boxId: string, what: string) {
  await getBox(actor, boxId);
  assertMayWriteBox(actor, boxId, what);
}

/** Refuses a batch with any step that would change a screen someone else holds; reads pass. */
export function assertMayRunSteps(actor: Actor, boxId: string, screen: number, steps: readonly Step[]) {
  const issuer = issuerOf(actor);
  steps.forEach((s, i) => {
    const t = BOX_STEPS.has(s.type) ? heldAgainst(issuer, boxId) : changesScreen(s) ? heldAgainst(issuer, boxId, screen) : undefined;
    if (!t) return;
    const where = t.screen === screen ? `screen ${screen}` : `screen ${t.screen} of this box (${s.type} reaches every screen)`;
    throw refused(`a person has control of ${where} (actions[${i}] is ${s.type}); wait until it is given back`);
  });
}

/** Refuses ending a person's takeover to anyone but that person or an owner/admin person. */
function assertMayEnd(actor: Actor, t: Takeover) {
  if (!t.by.startsWith("user:")) return;
  if (issuerOf(actor) === t.by) return;
  if (actor.kind === "workspace" && actor.userId && atLeast(actor.role, "admin")) return;
  throw new ApiError(
    "denied",
    `a person took screen ${t.screen}; only they or an owner or admin of the workspace can give it back ` +
      `(it also comes back by itself ${env().HOLM_TAKEOVER_GRACE_SECS} s after they leave)`,
  );
}

/**
 * Whether a takeover still has its person. A person's takeover lives while that person has a
 * control connection; one made with a key or the server token hands the screen to whoever drives
 * it in the console, so any control connection keeps it.
 */
function keptAlive(t: Takeover, drivers: string[]): boolean {
  return t.by.startsWith("user:") ? drivers.includes(t.by) : drivers.length > 0;
}

function armGrace(t: Takeover) {
  const k = keyOf(t.boxId, t.screen);
  if (graceTimers.has(k)) return;
  const timer = setTimeout(() => {
    graceTimers.delete(k);
    const cur = held.get(k);
    if (cur === t && !keptAlive(t, viewers(t.boxId, t.screen).drivers)) {
      void end(t, "the person's control connection was gone for the grace period").catch((err) =>
        console.error("[holm] automatic give-back failed:", err),
      );
    }
  }, graceMs());
  timer.unref();
  graceTimers.set(k, timer);
}

function disarmGrace(boxId: string, screen: number) {
  const k = keyOf(boxId, screen);
  clearTimeout(graceTimers.get(k));
  graceTimers.delete(k);
}

/** The URL of the console viewer in control mode for one screen. */
export function controlUrl(boxId: string, screen: number): string {
  return `${publicUrl()}/boxes/${boxId}?screen=${screen}&control=1`;
}

export async function takeOver(actor: Actor, t: ScreenTarget, opts: { shared: boolean }) {
  const by = issuerOf(actor);
  const k = keyOf(t.box.id, t.screen);
  const cur = held.get(k);
  if (cur && cur.by !== by && cur.exclusive) {
    throw new ApiError("denied", `screen ${t.screen} is already held by another person; ask them to give it back`, {
      retryable: true,
    });
  }
  if (cur && cur.by !== by && cur.by.startsWith("user:") && !by.startsWith("user:")) {
    // A shared takeover is still the person's: the agent may not make it its own.
    throw new ApiError("denied", `a person has screen ${t.screen} (shared); the agent cannot take it from them`, { retryable: true });
  }
  const takeover: Takeover = {
    boxId: t.box.id,
    owner: t.box.owner,
    screen: t.screen,
    by,
    exclusive: !opts.shared,
    since_ms: cur?.since_ms ?? Date.now(),
  };
  held.set(k, takeover);
  if (takeover.exclusive) {
    // Control sockets of anyone who may not drive now (the agent's) end at once, before any
    // await: from here on the viewer socket refuses them new ones.
    closeViewers(t.box.id, t.screen, {
      mode: "control",
      which: (c) => !mayDrive(takeover, c.issuer),
      code: VIEWER_CLOSE.denied,
      reason: "a person took control of this screen",
    });
  }
  disarmGrace(t.box.id, t.screen);
  if (!keptAlive(takeover, viewers(t.box.id, t.screen).drivers)) armGrace(takeover);
  let released: unknown = { released: [], released_keys: [] };
  clearInterval(guardRefresh.get(k));
  guardRefresh.delete(k);
  if (takeover.exclusive) {
    // The guard stops agent input in the box itself, even mid-batch, and releases whatever the
    // agent holds down, so the person never inherits a stuck key.
    const guard = () => callAgent(t.box, agentCall("guard", { n: t.screen }), { on: true, ttl_ms: GUARD_TTL_MS });
    released = await guard();
    const timer = setInterval(() => {
      if (held.get(k) !== takeover) return clearInterval(timer);
      guard().catch((err) => console.error(`[holm] refreshing the input guard of ${k} failed:`, err));
    }, GUARD_EVERY_MS);
    timer.unref();
    guardRefresh.set(k, timer);
  } else if (cur?.exclusive) {
    await callAgent(t.box, agentCall("guard", { n: t.screen }), { on: false });
  }
  if (!cur) {
    // A person taking the screen in the console, or an agent handing it to the people there.
    const who = await attribution(actor);
    await recordEntry(t.box.id, {
      actor: who.actor,
      event: "takeover_started",
      screen: t.screen,
      data: { ...who.data, exclusive: takeover.exclusive },
    }).catch((err) => console.error("[holm] trace takeover_started failed:", err));
    const box = t.box;
    const sampler = setInterval(() => {
      if (held.get(k) !== takeover) return clearInterval(sampler);
      void sampleSoon(box, t.screen, "person", 0);
    }, SAMPLE_EVERY_MS);
    sampler.unref();
    samplers.set(k, sampler);
    await recordEvent("screen.taken_over", {
      owner: t.box.owner,
      box_id: t.box.id,
      runtime: "docker",
      data: { screen: t.screen, ...who.data, exclusive: takeover.exclusive },
    });
  }
  takeoverChanges.emit("change", { ...takeover, taken_over: true, released });
  return { url: controlUrl(t.box.id, t.screen), exclusive: takeover.exclusive, screen: t.screen };
}

/**
 * Ends a takeover. `endedBy` is who gave it back by hand; without it the server ended it (the
 * grace timer, the box stopping, the holder losing access). The trace entry and the event name
 * that one (`by`, `by_name`, and the entry's actor) and whose takeover it was (`held_by`,
 * `held_by_name`).
 */
async function end(t: Takeover, why: string, box?: ScreenTarget["box"], endedBy: Actor = SERVER_ITSELF) {
  const k = keyOf(t.boxId, t.screen);
  if (held.get(k) !== t) return;
  held.delete(k);
  disarmGrace(t.boxId, t.screen);
  clearInterval(guardRefresh.get(k));
  guardRefresh.delete(k);
  clearInterval(samplers.get(k));
  samplers.delete(k);
  const who = await attribution(endedBy);
  const data = { ...who.data, held_by: t.by, held_by_name: await issuerName(t.by).catch(() => t.by), why };
  await recordEntry(t.boxId, { actor: who.actor, event: "takeover_ended", screen: t.screen, data }).catch(
    (err) => console.error("[holm] trace takeover_ended failed:", err),
  );
  if (t.exclusive) {
    const target = box ?? (await requireRunningBox(SERVER_ITSELF, t.boxId, AbortSignal.timeout(2000)).catch(() => undefined));
    if (target) {
      await callAgent(target, agentCall("guard", { n: t.screen }), { on: false }).catch((err) =>
        console.error(`[holm] lowering the input guard of ${k} failed (it lapses by itself):`, err),
      );
    }
  }
  // Control connections end with the takeover; the console reconnects them as watchers.
  closeViewers(t.boxId, t.screen, { mode: "control", code: VIEWER_CLOSE.normal, reason: "the screen was given back" });
  await recordEvent("screen.given_back", {
    owner: t.owner,
    box_id: t.boxId,
    runtime: "docker",
    data: { screen: t.screen, ...data },
  });
  takeoverChanges.emit("change", { ...t, taken_over: false, why });
}

export async function giveBack(actor: Actor, t: ScreenTarget): Promise<{ given_back: boolean; screen: number }> {
  const cur = takeoverOf(t.box.id, t.screen);
  if (!cur) return { given_back: false, screen: t.screen };
  assertMayEnd(actor, cur);
  await end(cur, "given back", t.box, actor);
  return { given_back: true, screen: t.screen };
}

// A person's input arrives over VNC: record it coarsely (a click and where; how many keys, never
// which), so the trace shows what the person did without leaking what they typed.
onViewerInput((input) => {
  const data: Record<string, unknown> =
    input.kind === "pointer"
      ? { kind: "click", x: input.detail.x, y: input.detail.y, button: input.detail.button }
      : input.kind === "key"
        ? { kind: "keys", count: input.detail.presses }
        : { kind: "clipboard", bytes: input.detail.bytes };
  void recordEntry(input.boxId, { actor: "person", event: "person_input", screen: input.screen, data: { ...data, by: input.issuer } }).catch(
    (err) => console.error("[holm] trace person_input failed:", err),
  );
});

// The grace timer follows the taker's control connections.
onViewersChange((change) => {
  const t = takeoverOf(change.boxId, change.screen);
  if (!t) return;
  if (keptAlive(t, change.drivers)) disarmGrace(t.boxId, t.screen);
  else armGrace(t);
});

// A box that stops or goes away gives its screens back.
boxChanges.on("change", (box: BoxJson) => {
  if (box.state === "ready" || box.state === "paused") return;
  for (const t of [...held.values()]) {
    if (t.boxId === box.id) void end(t, `the box is ${box.state}`).catch(() => {});
  }
});

// A holder who may no longer drive (removed from the workspace, or made a viewer) gives the
// screen back at once, rather than after the grace period.
onPrincipalChange((change) => {
  if (change.kind !== "member") return;
  for (const t of [...held.values()]) {
    if (t.by !== `user:${change.userId}` || t.owner !== change.workspaceId) continue;
    void principalAccess(t.by, t.owner, "member")
      .then((a) => (a.ok ? undefined : end(t, `the person may no longer control it (${a.why})`)))
      .catch((err) => console.error("[holm] giving back a screen after an access change failed:", err));
  }
});
