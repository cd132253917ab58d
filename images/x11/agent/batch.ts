// A batch: every step in the box, one answer. Holds the screen's lock throughout, lets go of
// what the steps left down unless a step asked to hold it, then reports the final state.
import type { Screen } from "./screen";
import { BOX_STEPS, WireBatchSchema, StepSchema, changesScreen, describeIssues, type Step } from "./schema";
import { runStep } from "./steps";
import { captureFrame, type Frame } from "./frames";
import { listWindows, type WindowInfo } from "./windows";
import { tabsOrNone, type TabInfo } from "./pages";
import { waylandWindows } from "./wayland-views";
import { AgentError, describeError, type ErrorCode } from "./errors";
import type { Holding } from "./holds";
import { sleep } from "./util";

export type StepResult = ({ ok: true } & Record<string, unknown>) | { ok: false; code: ErrorCode; message: string };

export interface BatchResult extends Holding {
  results: StepResult[];
  stopped_at: number | null;
  frame?: Frame;
  frame_error?: string;
  cursor?: { x: number; y: number };
  windows: WindowInfo[];
  /** The screen's Chromium tabs after the batch; [] when its DevTools do not answer. */
  tabs: TabInfo[];
  released: string[];
  released_keys: string[];
  took_ms: number;
}

/** Validates the whole body before anything runs: a malformed batch does nothing. */
export function parseBatch(body: unknown): { batch: ReturnType<typeof WireBatchSchema.parse>; steps: Step[] } {
  const b = WireBatchSchema.safeParse(body);
  if (!b.success) throw new AgentError("bad_request", describeIssues(b.error));
  const steps: Step[] = [];
  b.data.actions.forEach((raw, i) => {
    const r = StepSchema.safeParse(raw);
    if (!r.success) {
      const type = typeof raw === "object" && raw !== null && "type" in raw ? String((raw as { type: unknown }).type) : "?";
      throw new AgentError("bad_request", `step ${i} (${type}): ${describeIssues(r.error)}`);
    }
    steps.push(r.data);
  });
  return { batch: b.data, steps };
}

/** `anyGuarded` says whether a person holds any screen of the box (for box-wide steps). */
export async function runBatch(screen: Screen, body: unknown, anyGuarded: () => boolean = () => false): Promise<BatchResult> {
  const { batch, steps } = parseBatch(body);
  return screen.lock.run(async () => {
    const started = Date.now();
    // Where the X connection was when the batch began: its input steps end with a round trip,
    // after which the window list can answer from what the X server reported (window-watch.ts).
    const xMark = screen.xMark();
    const results: StepResult[] = [];
    let stoppedAt: number | null = null;
    // A part of a larger batch (schema.ts WireBatchSchema): steps are named by their index in
    // the whole batch; holds stay down between parts and are let go by the last one.
    const base = batch.index_base ?? 0;
    if (!batch.continued) screen.holds.beginBatch();
    for (let i = 0; i < steps.length; i++) {
      try {
        // Refused while a person holds this screen (input, setting the clipboard), or any screen
        // for box-wide steps: the server refuses them too; this stops a batch already running.
        if (changesScreen(steps[i]) && Date.now() < screen.guardedUntil) {
          throw new AgentError("denied", "a person has control of this screen");
        }
        if (BOX_STEPS.has(steps[i].type) && anyGuarded()) {
          throw new AgentError("denied", "a person has control of a screen of this box");
        }
        const data = await runStep(screen, steps[i]);
        results.push({ ok: true, ...data });
      } catch (err) {
        const { code, message } = describeError(err);
        results.push({ ok: false, code, message: `step ${base + i} (${steps[i].type}): ${message}` });
        if (!batch.keep_going) {
          stoppedAt = base + i;
          break;
        }
      }
    }
    if (batch.continues) {
      return { results, stopped_at: stoppedAt, windows: [], tabs: [], released: [], released_keys: [], ...screen.holds.snapshot(), took_ms: Date.now() - started };
    }
    const atEnd = await screen.holds.releaseAll(true);
    const byTimers = screen.holds.endBatch();
    if (batch.settle_ms) await sleep(batch.settle_ms);
    const want = new Set(batch.want ?? []);
    const out: BatchResult = {
      results,
      stopped_at: stoppedAt,
      windows: [],
      tabs: [],
      released: [...byTimers.released, ...atEnd.released],
      released_keys: [...byTimers.released_keys, ...atEnd.released_keys],
      ...screen.holds.snapshot(),
      took_ms: 0,
    };
    await Promise.all([
      want.has("frame")
        ? captureFrame(screen, {}, batch.have_frame).then(
            (f) => (out.frame = f),
            (e: unknown) => (out.frame_error = describeError(e).message),
          )
        : null,
      want.has("cursor")
        ? screen.desk().then(async (s) => {
            out.cursor = await s.pointer();
          }, () => undefined)
        : null,
      (screen.isWayland
        ? screen.wayland().then(waylandWindows)
        : screen.session().then((s) => listWindows(s, !batch.settle_ms && xMark?.conn === s.conn ? xMark.n : undefined))
      ).then(
        (w) => (out.windows = w),
        () => undefined,
      ),
      tabsOrNone(screen).then((t) => (out.tabs = t)),
    ]);
    out.took_ms = Date.now() - started;
    return out;
  });
}
