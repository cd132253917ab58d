import { EventEmitter } from "node:events";
import { ApiError } from "~/utils/api-error.server";
import { type Actor, issuerOf } from "~/utils/auth.server";
import { env, publicUrl } from "~/utils/env.server";
import type { Step } from "./action-schema.server";
import { INPUT_STEPS } from "./action-schema.server";
import { type BoxJson, boxChanges, requireRunningBox } from "./box.server";
import { recordEvent } from "./event.server";
import { sampleSoon } from "./recorder.server";
import { type ScreenTarget, callAgent } from "./screen.server";
import { recordEntry } from "./trace.server";
import { VIEWER_CLOSE, closeViewers, onViewerInput, onViewersChange, viewers } from "./viewer.server";

// Who has each screen. Held in this process only (one copy: docs/decisions/0002): a restart
// gives every screen back, so a takeover can never outlive the server either.

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

/** Refuses agent input on a screen a person holds exclusively; reads still pass. */
export function assertAgentMayDrive(boxId: string, screen: number, steps: Pick<Step, "type">[]) {
  const t = takeoverOf(boxId, screen);
  if (!t?.exclusive) return;
  const input = steps.findIndex((s) => INPUT_STEPS.has(s.type));
  if (input === -1) return;
  throw new ApiError(
    "denied",
    `a person has control of screen ${screen} (actions[${input}] is input); wait until it is given back`,
    { retryable: true },
  );
}

/** Same check for a single input route (window focus, arrange, close). */
export function assertAgentMayInput(boxId: string, screen: number) {
  if (takeoverOf(boxId, screen)?.exclusive) {
    throw new ApiError("denied", `a person has control of screen ${screen}; wait until it is given back`, { retryable: true });
  }
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
  const takeover: Takeover = {
    boxId: t.box.id,
    owner: t.box.owner,
    screen: t.screen,
    by,
    exclusive: !opts.shared,
    since_ms: cur?.since_ms ?? Date.now(),
  };
  held.set(k, takeover);
  disarmGrace(t.box.id, t.screen);
  if (!keptAlive(takeover, viewers(t.box.id, t.screen).drivers)) armGrace(takeover);
  let released: unknown = { released: [], released_keys: [] };
  clearInterval(guardRefresh.get(k));
  guardRefresh.delete(k);
  if (takeover.exclusive) {
    // The guard stops agent input in the box itself, even mid-batch, and releases whatever the
    // agent holds down, so the person never inherits a stuck key.
    const guard = () => callAgent(t.box, "POST", `/screens/${t.screen}/guard`, { on: true, ttl_ms: GUARD_TTL_MS });
    released = await guard();
    const timer = setInterval(() => {
      if (held.get(k) !== takeover) return clearInterval(timer);
      guard().catch((err) => console.error(`[holm] refreshing the input guard of ${k} failed:`, err));
    }, GUARD_EVERY_MS);
    timer.unref();
    guardRefresh.set(k, timer);
  } else if (cur?.exclusive) {
    await callAgent(t.box, "POST", `/screens/${t.screen}/guard`, { on: false });
  }
  if (!cur) {
    await recordEntry(t.box.id, {
      actor: "person",
      event: "takeover_started",
      screen: t.screen,
      data: { by, exclusive: takeover.exclusive },
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
      data: { screen: t.screen, by, exclusive: takeover.exclusive },
    });
  }
  takeoverChanges.emit("change", { ...takeover, taken_over: true, released });
  return { url: controlUrl(t.box.id, t.screen), exclusive: takeover.exclusive, screen: t.screen };
}

async function end(t: Takeover, why: string, box?: ScreenTarget["box"]) {
  const k = keyOf(t.boxId, t.screen);
  if (held.get(k) !== t) return;
  held.delete(k);
  disarmGrace(t.boxId, t.screen);
  clearInterval(guardRefresh.get(k));
  guardRefresh.delete(k);
  clearInterval(samplers.get(k));
  samplers.delete(k);
  await recordEntry(t.boxId, { actor: "server", event: "takeover_ended", screen: t.screen, data: { by: t.by, why } }).catch(
    (err) => console.error("[holm] trace takeover_ended failed:", err),
  );
  if (t.exclusive) {
    const target = box ?? (await requireRunningBox({ kind: "server" }, t.boxId, AbortSignal.timeout(2000)).catch(() => undefined));
    if (target) {
      await callAgent(target, "POST", `/screens/${t.screen}/guard`, { on: false }).catch((err) =>
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
    data: { screen: t.screen, by: t.by, why },
  });
  takeoverChanges.emit("change", { ...t, taken_over: false, why });
}

export async function giveBack(t: ScreenTarget): Promise<{ given_back: boolean; screen: number }> {
  const cur = takeoverOf(t.box.id, t.screen);
  if (!cur) return { given_back: false, screen: t.screen };
  await end(cur, "given back", t.box);
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
