import { randomBytes } from "node:crypto";
import { agentCall } from "~/protocol/agent";
import type { Step } from "./action-schema.server";
import { INPUT_STEPS } from "./action-schema.server";
import type { Actor } from "./actor";
import { attribution } from "./actor-name.server";
import type { RunningBox } from "./box.server";
import { callAgent } from "./screen.server";
import type { ActedData, BatchMark } from "./trace-types.server";
import { type TraceActor, type TraceEntryInput, recordEntries, recordEntry, recordFrameIfChanged } from "./trace.server";
import { log } from "~/utils/log.server";

// What goes into a box's trace from the drive side: one `acted` entry per step (each marked with
// its batch, so a fork can send the batch as one again: trace-types.server.ts), refusals, and a
// `frame` entry when a screen changed. Each but frames names who did it: the actor (a person
// through their session, an agent through a key or the server token) and `by`, `by_name`. Frames are sampled after the answer has gone out, so
// recording costs a batch almost nothing; while a person holds a screen it is sampled about once
// a second. Bytes of written files and clipboard text are never stored, only that they happened.
// The hash a box reports with a frame is only its change token (the next `have`); the trace names
// the frame by the server's own hash of the bytes (trace-types.server.ts).

/** A step as the trace keeps it: enough to replay it, without file or clipboard contents. */
export function traceableStep(step: Step): Record<string, unknown> {
  if (step.type === "write_file") {
    const { contents_base64, ...what } = step.what;
    return { ...step, what: { ...what, bytes: Math.floor((contents_base64.length * 3) / 4) } };
  }
  if (step.type === "clipboard" && step.text !== undefined) {
    const { text, ...rest } = step;
    return { ...rest, chars: text.length };
  }
  return step;
}

interface StepOutcome {
  ok?: boolean;
  code?: string;
}

/** How a batch ran, besides its steps: what its `acted` entries carry to replay it as one. */
export type BatchRun = Partial<Omit<BatchMark, "id" | "index">>;

export async function recordBatch(
  actor: Actor,
  box: RunningBox,
  screen: number,
  steps: Step[],
  results: StepOutcome[],
  frame?: { hash?: string; png_base64?: string },
  run: BatchRun = {},
) {
  const at = Date.now();
  const id = randomBytes(8).toString("hex");
  const { began_ms = at, settle_ms, want, keep_going } = run;
  const extras = { ...(settle_ms !== undefined && { settle_ms }), ...(want && { want }), ...(keep_going !== undefined && { keep_going }) };
  const who = await attribution(actor);
  const entries: TraceEntryInput[] = results.map((r, i) => {
    const data: ActedData = {
      step: traceableStep(steps[i]!),
      ok: r.ok !== false,
      ...(r.ok === false ? { code: r.code } : {}),
      batch: { id, index: i, began_ms, ...extras },
    };
    return { actor: who.actor, event: "acted", screen, at_ms: at, data: { ...data, ...who.data } };
  });
  if (entries.length) await recordEntries(box.id, entries);
  const key = `${box.id}/${screen}`;
  if (frame?.hash && frame.png_base64) {
    lastHash.set(key, frame.hash);
    const png = Buffer.from(frame.png_base64, "base64");
    void recordFrameIfChanged(box.id, screen, "agent", { png }).catch((err) =>
      log.error({ err }, `recording a frame of ${key} failed`),
    );
  } else if (steps.some((s) => INPUT_STEPS.has(s.type))) {
    void sampleSoon(box, screen, "agent");
  }
}

export async function recordRefusal(actor: Actor, boxId: string, screen: number, steps: Step[], reason: string) {
  const who = await attribution(actor);
  await recordEntry(boxId, {
    actor: who.actor,
    event: "refused",
    screen,
    data: { reason, steps: steps.map(traceableStep), ...who.data },
  });
}

const lastHash = new Map<string, string>();
const pending = new Map<string, Promise<void>>();
/** When input was last reported on a screen (performance.now()), while a sample of it is pending. */
const lastInput = new Map<string, number>();
/** A sample waits for the screen to be quiet for its delay, but no longer than this after it was asked for. */
const SAMPLE_MAX_WAIT_MS = 1000;

/**
 * Grabs a frame once no input came for `delayMs` (at most SAMPLE_MAX_WAIT_MS after it was asked
 * for) and records it if the screen changed; one at a time per screen. A capture reads and
 * encodes the whole screen in the box, and batches that met one waited behind it: a stream of
 * batches had one every ~150 ms, now about one a second (ADR 0015, 2026-12-08). Input reported
 * while a capture was under way may not be in it (the pixels were read first), so another sample
 * follows for it: the last batch of a stream that ended during a capture used to get no frame of
 * its own, and the trace ended on the screen before it.
 */
export function sampleSoon(box: RunningBox, screen: number, actor: TraceActor, delayMs = 150): Promise<void> {
  const key = `${box.id}/${screen}`;
  lastInput.set(key, performance.now());
  const running = pending.get(key);
  if (running) return running;
  const p = (async () => {
    for (;;) {
      // Settled, so the frame shows what the input did rather than the moment before.
      const asked = performance.now();
      for (;;) {
        const wait = Math.min(lastInput.get(key)! + delayMs, asked + SAMPLE_MAX_WAIT_MS) - performance.now();
        if (wait <= 0) break;
        await new Promise((r) => setTimeout(r, wait));
      }
      const began = performance.now();
      await sampleNow(box, screen, actor, key);
      if (lastInput.get(key)! < began) return;
    }
  })()
    .catch((err) => log.error({ err }, `frame sample of ${key} failed`))
    .finally(() => {
      pending.delete(key);
      lastInput.delete(key);
    });
  pending.set(key, p);
  return p;
}

async function sampleNow(box: RunningBox, screen: number, actor: TraceActor, key: string): Promise<void> {
  const have = lastHash.get(key);
  const frame = await callAgent<{ hash: string; unchanged: boolean; png_base64?: string }>(
    box,
    agentCall("frame", { n: screen }, { have }),
    undefined,
    10_000,
    "bulk",
  );
  if (frame.unchanged || !frame.png_base64) return;
  lastHash.set(key, frame.hash);
  await recordFrameIfChanged(box.id, screen, actor, { png: Buffer.from(frame.png_base64, "base64") });
}

/** `ran ls /tmp → 0`: the command and its exit, never its output. */
export async function recordRan(actor: Actor, boxId: string, argv: string[], out: { code?: unknown; timed_out?: unknown }) {
  const who = await attribution(actor);
  await recordEntry(boxId, { actor: who.actor, event: "ran", data: { argv, code: out.code ?? null, timed_out: out.timed_out === true, ...who.data } });
}

export async function recordFileWritten(actor: Actor, boxId: string, path: string, bytes: number) {
  const who = await attribution(actor);
  await recordEntry(boxId, { actor: who.actor, event: "file_written", data: { path, bytes, ...who.data } });
}

export async function recordClipboardSet(actor: Actor, boxId: string, screen: number, selection: string, chars: number) {
  const who = await attribution(actor);
  await recordEntry(boxId, { actor: who.actor, event: "clipboard_set", screen, data: { selection, chars, ...who.data } });
}

/**
 * A page action through a route (`POST …/page/element`, `…/page/evaluate`, `…/pages/{tab}/focus`,
 * `DELETE …/pages/{tab}`), as the step a fork replays (one step, no batch mark: `on_page`,
 * `evaluate`, `on_tab`), with the tab it ran in; `code` when it was refused. The screen's frame
 * is sampled after it, as after input steps. A `fill` by `secret_ref` keeps the secret's name only.
 */
export async function recordPageAct(
  actor: Actor,
  box: RunningBox,
  screen: number,
  step: Record<string, unknown> & { type: string },
  tab: string,
  code?: string,
) {
  const ok = code === undefined;
  const who = await attribution(actor);
  await recordEntry(box.id, { actor: who.actor, event: "acted", screen, data: { step, ok, ...(!ok && { code }), tab, ...who.data } });
  if (ok) void sampleSoon(box, screen, "agent");
}

/** Refusals that come after a page action began: recorded (a bad request is not). */
const PAGE_ACT_RECORDED = new Set(["not_found", "failed", "timeout"]);

/** Runs a page action of a route and records it (done, or refused once it began). */
export async function recordingPageAct<T>(
  actor: Actor,
  box: RunningBox,
  screen: number,
  step: Record<string, unknown> & { type: string },
  tab: string,
  run: () => Promise<T>,
): Promise<T> {
  let out: T;
  try {
    out = await run();
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === "string" && PAGE_ACT_RECORDED.has(code)) await recordPageAct(actor, box, screen, step, tab, code);
    throw err;
  }
  await recordPageAct(actor, box, screen, step, tab);
  return out;
}
