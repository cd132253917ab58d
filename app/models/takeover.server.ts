import { EventEmitter } from "node:events";
import { BOX_STEPS, changesScreen } from "~/protocol/actions";
import { agentCall } from "~/protocol/agent";
import { VIEWER_CLOSE } from "~/protocol/viewer-socket";
import { ApiError } from "~/utils/api-error.server";
import { clustered } from "~/utils/cluster.server";
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
import { mayDriveHeld } from "~/protocol/direct-viewer";
import { recordingStarts, startTakeoverRecording, stopTakeoverRecording } from "./takeover-recording.server";
import { type Takeover, claimGuard, deleteHeld, heldTakeover, heldTakeovers, keepHeld, keyOf, loadHeld, onRemoteTakeover, writeHeld } from "./takeover-store.server";
import { recordEntry } from "./trace.server";
import { closeViewers, onViewerInput, onViewersChange, viewers } from "./viewer.server";
import { log } from "~/utils/log.server";
import { countTakeover } from "~/utils/metrics.server";

// Who has each screen: in the store (./takeover-store.server.ts, docs/decisions/0021), so a
// takeover outlives the restart of every server and every server of several sees the same one.
//
// Hands off (docs/security.md): while a screen is held exclusively, nothing but its
// holder changes it. The agent (an API key, the server token) gets 409 `denied`, retryable, for
// every write that reaches the screen: input, exec and file writes (box-wide: they reach every
// screen), setting the clipboard, windows, lifecycle, control tickets and control sockets; its
// open control sockets are closed. Reads go on (frames, the clipboard, files, trace, watching).
// A person's takeover ends by that person, an owner or admin of the workspace, or the grace
// period; never by a key or the server token. One the agent asked for through /v1 is the agent's
// to end.

export type { Takeover };

// While a person holds a screen the server cannot see their input, so it looks about once a
// second and records a frame when something changed.
const SAMPLE_EVERY_MS = 1000;
// The agent's input guard lapses by itself unless raised again, so a takeover whose servers all
// died cannot leave a box refusing its agent for long; one server raises it every 30 s.
const GUARD_TTL_MS = 90_000;
const GUARD_EVERY_MS = 30_000;
// Each server that tracks a takeover looks at its grace this often.
const tickMs = () => Math.min(1000, Math.max(100, graceMs() / 4));
// Missed news (Redis dropped a message, or was away) is made up by reading every takeover again.
const REREAD_EVERY_MS = 5000;
export const takeoverChanges = new EventEmitter();
takeoverChanges.setMaxListeners(0);

export function takeoverOf(boxId: string, screen: number): Takeover | undefined {
  return heldTakeover(boxId, screen);
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
  return mayDriveHeld(t, issuer);
}

const refused = (message: string) => new ApiError("denied", message, { retryable: true });

/** The takeover on `boxId` that keeps `issuer` off it: of `screen`, or of any screen (box-wide). */
export function heldAgainst(issuer: string, boxId: string, screen?: number): Takeover | undefined {
  if (screen !== undefined) {
    const t = takeoverOf(boxId, screen);
    return mayDrive(t, issuer) ? undefined : t;
  }
  for (const t of heldTakeovers()) if (t.boxId === boxId && !mayDrive(t, issuer)) return t;
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

/** The URL of the console viewer in control mode for one screen. */
export function controlUrl(boxId: string, screen: number): string {
  return `${publicUrl()}/boxes/${boxId}?screen=${screen}&control=1`;
}

export async function takeOver(actor: Actor, t: ScreenTarget, opts: { shared: boolean }) {
  const by = issuerOf(actor);
  const now = Date.now();
  const { cur, next: takeover } = await writeHeld(t.box.id, t.screen, (cur) => {
    if (cur && cur.by !== by && cur.exclusive) {
      throw new ApiError("denied", `screen ${t.screen} is already held by another person; ask them to give it back`, {
        retryable: true,
      });
    }
    if (cur && cur.by !== by && cur.by.startsWith("user:") && !by.startsWith("user:")) {
      // A shared takeover is still the person's: the agent may not make it its own.
      throw new ApiError("denied", `a person has screen ${t.screen} (shared); the agent cannot take it from them`, { retryable: true });
    }
    return {
      boxId: t.box.id,
      owner: t.box.owner,
      screen: t.screen,
      by,
      exclusive: !opts.shared,
      since_ms: cur?.since_ms ?? now,
      recording: cur?.recording ?? null,
      alive_until_ms: now + graceMs(),
      guard_at_ms: now,
    };
  });
  if (!cur) {
    started.add(keyOf(t.box.id, t.screen));
    countTakeover();
  }
  if (takeover.exclusive) {
    // Control sockets of anyone who may not drive now (the agent's) end at once; from here on the
    // viewer socket refuses them new ones. Other servers do the same for theirs when they hear.
    closeViewers(t.box.id, t.screen, {
      mode: "control",
      which: (c) => !mayDrive(takeover, c.issuer),
      code: VIEWER_CLOSE.denied,
      reason: "a person took control of this screen",
    });
  }
  ensureTick();
  let released: unknown = { released: [], released_keys: [] };
  if (takeover.exclusive) {
    // The guard stops agent input in the box itself, even mid-batch, and releases whatever the
    // agent holds down, so the person never inherits a stuck key.
    released = await raiseGuard(t.box, t.screen, takeover.by);
  } else if (cur?.exclusive) {
    await callAgent(t.box, agentCall("guard", { n: t.screen }), { on: false });
  }
  if (!cur) {
    // A person taking the screen in the console, or an agent handing it to the people there.
    log.info({ box: t.box.id, screen: t.screen, by, exclusive: takeover.exclusive }, "takeover started");
    const who = await attribution(actor);
    await recordEntry(t.box.id, {
      actor: who.actor,
      event: "takeover_started",
      screen: t.screen,
      data: { ...who.data, exclusive: takeover.exclusive },
    }).catch((err) => log.error({ err }, "trace takeover_started failed"));
    const data = { screen: t.screen, ...who.data, exclusive: takeover.exclusive };
    await recordEvent("screen.taken_over", { owner: t.box.owner, box_id: t.box.id, runtime: "docker", data });
    void startTakeoverRecording(t.box, takeover, actor);
  }
  takeoverChanges.emit("change", { ...takeover, taken_over: true, released });
  return { url: controlUrl(t.box.id, t.screen), exclusive: takeover.exclusive, screen: t.screen };
}

/** `by` holds the screen: the box closes direct control sockets of anyone else (app/protocol/direct-viewer.ts). */
function raiseGuard(box: ScreenTarget["box"], screen: number, by: string): Promise<unknown> {
  return callAgent(box, agentCall("guard", { n: screen }), { on: true, ttl_ms: GUARD_TTL_MS, by });
}

/**
 * Ends a takeover. `endedBy` is who gave it back by hand; without it the server ended it (the
 * grace period, the box stopping, the holder losing access). The trace entry and the event name
 * that one (`by`, `by_name`, and the entry's actor) and whose takeover it was (`held_by`,
 * `held_by_name`). `lapsedBy`: end it only if its grace ran out by then (another server's
 * connection may have kept it).
 */
async function end(t: Takeover, why: string, box?: ScreenTarget["box"], endedBy: Actor = SERVER_ITSELF, lapsedBy?: number) {
  if (!(await deleteHeld(t, lapsedBy))) return;
  const k = keyOf(t.boxId, t.screen);
  started.delete(k);
  const who = await attribution(endedBy);
  const data = { ...who.data, held_by: t.by, held_by_name: await issuerName(t.by).catch(() => t.by), why };
  await recordEntry(t.boxId, { actor: who.actor, event: "takeover_ended", screen: t.screen, data }).catch((err) => log.error({ err }, "trace takeover_ended failed"));
  const needed = t.exclusive || t.recording || recordingStarts(t);
  const target = needed ? (box ?? (await requireRunningBox(SERVER_ITSELF, t.boxId, AbortSignal.timeout(2000)).catch(() => undefined))) : undefined;
  void stopTakeoverRecording(target, t, endedBy);
  if (t.exclusive && target) {
    await callAgent(target, agentCall("guard", { n: t.screen }), { on: false }).catch((err) =>
      log.error({ err }, `lowering the input guard of ${k} failed (it lapses by itself)`),
    );
  }
  endedHere(t, why);
  await recordEvent("screen.given_back", {
    owner: t.owner,
    box_id: t.boxId,
    runtime: "docker",
    data: { screen: t.screen, ...data },
  });
}

/** What every server does for its own sockets when a takeover ends, wherever it was ended. */
function endedHere(t: Takeover, why: string) {
  started.delete(keyOf(t.boxId, t.screen));
  // Control connections end with the takeover; the console reconnects them as watchers.
  closeViewers(t.boxId, t.screen, { mode: "control", code: VIEWER_CLOSE.normal, reason: "the screen was given back" });
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
  void recordEntry(input.boxId, { actor: "person", event: "person_input", screen: input.screen, data: { ...data, by: input.issuer } }).catch((err) => log.error({ err }, "trace person_input failed"));
});

// Takeovers this server started: it samples their screen even with no control connection here.
const started = new Set<string>();
const lastSample = new Map<string, number>();
let tick: NodeJS.Timeout | undefined;
let rereadAt = 0;
let ticking = false;

function ensureTick() {
  if (tick) return;
  tick = setInterval(() => {
    if (ticking) return;
    ticking = true;
    void onTick()
      .catch((err) => log.error({ err }, "the takeover tick failed"))
      .finally(() => (ticking = false));
  }, tickMs());
  tick.unref();
}

/**
 * Each server, for each takeover: keeps its grace going while a control connection of its
 * holder is here; ends it once the grace ran out with none anywhere (the store decides which
 * server does); raises the box's input guard again when it is due (one server does); and
 * samples the screen where the person's connection is.
 */
async function onTick() {
  const now = Date.now();
  if (clustered() && now - rereadAt > REREAD_EVERY_MS) {
    rereadAt = now;
    const before = new Map(heldTakeovers().map((t) => [keyOf(t.boxId, t.screen), t]));
    for (const t of await loadHeld()) before.delete(keyOf(t.boxId, t.screen));
    for (const gone of before.values()) endedHere(gone, "given back on another server");
  }
  for (const t of heldTakeovers()) {
    const k = keyOf(t.boxId, t.screen);
    const here = keptAlive(t, viewers(t.boxId, t.screen).drivers);
    if (here && t.alive_until_ms - now < (graceMs() * 2) / 3) await keepHeld(t, now + graceMs());
    else if (!here && t.alive_until_ms <= now) {
      await end(t, "the person's control connection was gone for the grace period", undefined, SERVER_ITSELF, now);
      continue;
    }
    if (t.exclusive && now - t.guard_at_ms >= GUARD_EVERY_MS && (await claimGuard(t, now))) {
      const box = await requireRunningBox(SERVER_ITSELF, t.boxId, AbortSignal.timeout(2000)).catch(() => undefined);
      if (box) await raiseGuard(box, t.screen, t.by).catch((err) => log.error({ err }, `raising the input guard of ${k} again failed`));
    }
    if ((here || started.has(k)) && now - (lastSample.get(k) ?? 0) >= SAMPLE_EVERY_MS) {
      lastSample.set(k, now);
      const box = await requireRunningBox(SERVER_ITSELF, t.boxId, AbortSignal.timeout(2000)).catch(() => undefined);
      if (box) void sampleSoon(box, t.screen, "person", 0);
    }
  }
  for (const k of lastSample.keys()) if (!heldTakeovers().some((t) => keyOf(t.boxId, t.screen) === k)) lastSample.delete(k);
}

/** Reads the takeovers in the store (at boot) and raises the input guard of each held one again. */
export async function loadTakeovers(): Promise<number> {
  const all = await loadHeld();
  const now = Date.now();
  for (const t of all) {
    // The grace starts again: its person's console reconnects within it.
    await keepHeld(t, now + graceMs());
    // A restart may have outlasted the guard's own lapse: one server raises it at once.
    if (t.exclusive && (await claimGuard(t, now))) {
      void requireRunningBox(SERVER_ITSELF, t.boxId, AbortSignal.timeout(5000))
        .then((box) => raiseGuard(box, t.screen, t.by))
        .catch((err) => log.error({ err }, `raising the input guard of ${keyOf(t.boxId, t.screen)} after a restart failed`));
    }
  }
  if (all.length) ensureTick();
  return all.length;
}

export function stopTakeovers() {
  clearInterval(tick);
  tick = undefined;
}

// Another server took or gave back a screen: this server's sockets follow.
onRemoteTakeover((_key, before, after) => {
  if (after) {
    ensureTick();
    if (after.exclusive) {
      closeViewers(after.boxId, after.screen, {
        mode: "control",
        which: (c) => !mayDrive(after, c.issuer),
        code: VIEWER_CLOSE.denied,
        reason: "a person took control of this screen",
      });
    }
    takeoverChanges.emit("change", { ...after, taken_over: true });
  } else if (before) endedHere(before, "given back on another server");
});

// When the last control connection here goes, the grace runs from now (not from the last tick).
onViewersChange((change) => {
  const t = takeoverOf(change.boxId, change.screen);
  if (!t || keptAlive(t, change.drivers)) return;
  void keepHeld(t, Date.now() + graceMs()).catch((err) => log.error({ err }, "starting a takeover's grace failed"));
});

// A box that stops or goes away gives its screens back.
boxChanges.on("change", (box: BoxJson) => {
  if (box.state === "ready" || box.state === "paused") return;
  for (const t of heldTakeovers()) {
    if (t.boxId === box.id) void end(t, `the box is ${box.state}`).catch(() => {});
  }
});

// A holder who may no longer drive (removed from the workspace, or made a viewer) gives the
// screen back at once, rather than after the grace period.
onPrincipalChange((change) => {
  if (change.kind !== "member") return;
  for (const t of heldTakeovers()) {
    if (t.by !== `user:${change.userId}` || t.owner !== change.workspaceId) continue;
    void principalAccess(t.by, t.owner, "member")
      .then((a) => (a.ok ? undefined : end(t, `the person may no longer control it (${a.why})`)))
      .catch((err) => log.error({ err }, "giving back a screen after an access change failed"));
  }
});
