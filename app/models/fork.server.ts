import { z } from "zod";
import { ApiError, unsupported } from "~/utils/api-error.server";
import { validate } from "~/utils/validate.server";
import { BatchSchema, type Step, StepSchema } from "./action-schema.server";
import type { Actor } from "./actor";
import { attribution } from "./actor-name.server";
import { type BatchInput, refusalRecorded, runBatch } from "./batch.server";
import { type BoxJson, type RunningBox, createBox, refuseUnsettled, requireRunningBox, waitUntilSettled } from "./box.server";
import { beginReplay, endReplay, stepReplay } from "./fork-progress.server";
import { enqueue } from "./job.server";
import { recordRefusal, sampleSoon } from "./recorder.server";
import type { ReplaySkip } from "~/protocol/fork-replay";
import { type Placement, PlacementSchema, SpecSchema } from "./spec.server";
import type { BatchMark } from "./trace-types.server";
import { type TraceEntry, readTrace, recordEntry, traceBox } from "./trace.server";
import { log } from "~/utils/log.server";

// Fork by replay: a new box from the source's spec and placement, then the recorded steps again,
// in order, at about the original speed. It copies no memory or disk, so it can differ. The steps
// of one recorded batch go to the box as one batch again, with its settle_ms, want and keep_going:
// what a step holds down is let go when its batch ends, so a drag made of mouse_down, move and
// mouse_up only comes out the same that way. Steps of older traces (no batch mark) go one by one.
// Its progress is kept and pushed as it goes (fork-progress.server.ts), so people and agents can
// follow a queued fork.

export const ForkSchema = z.strictObject({
  mode: z.enum(["replay", "snapshot"]).optional(),
  up_to: z.number().int().min(0).optional(),
  placement: PlacementSchema.optional(),
  include_person: z.boolean().optional(),
});
export type ForkInput = z.infer<typeof ForkSchema>;

const MAX_GAP_MS = 2000;
const TIME_LIMIT_MS = 3 * 60_000;

export type Skipped = ReplaySkip;

export interface ReplayReport {
  attempted: number;
  ok: number;
  stopped_at: number | null;
  truncated: boolean;
  skipped: Skipped[];
  /** Why the replay ended early, when a batch was refused or could not run (holm's, beside the seed's fields). */
  reason?: string;
}

/** All entries up to `up_to`, read page by page. */
async function entriesOf(boxId: string, upTo?: number): Promise<TraceEntry[]> {
  const out: TraceEntry[] = [];
  let after: number | undefined;
  for (;;) {
    const page = await readTrace(boxId, { after, limit: 500 });
    for (const e of page.entries) {
      if (upTo !== undefined && e.seq > upTo) return out;
      out.push(e);
    }
    if (page.next === null) return out;
    after = page.next;
  }
}

export interface Planned {
  entry: TraceEntry;
  step: Step;
}

/** Splits the trace into steps to redo and what cannot be redone, with the reason. */
export function plan(entries: TraceEntry[], includePerson: boolean): { steps: Planned[]; skipped: Skipped[] } {
  const steps: Planned[] = [];
  const skipped: Skipped[] = [];
  for (const e of entries) {
    const data = e.data ?? {};
    if (e.event === "acted") {
      const raw = data.step as Record<string, unknown> | undefined;
      const type = String(raw?.type ?? "");
      if (data.ok === false) {
        skipped.push({ seq: e.seq, kind: type, why: "the source box refused this step" });
      } else if (type === "write_file") {
        const path = (raw?.what as { path?: string } | undefined)?.path ?? "a file";
        skipped.push({ seq: e.seq, kind: "file_written", why: `the trace records that ${path} was written, not what went into it` });
      } else if (type === "clipboard" && raw && "chars" in raw) {
        skipped.push({ seq: e.seq, kind: "clipboard_set", why: "the trace records that the clipboard was set, not the text" });
      } else {
        const parsed = StepSchema.safeParse(raw);
        if (parsed.success) steps.push({ entry: e, step: parsed.data });
        else skipped.push({ seq: e.seq, kind: type || "acted", why: "the recorded step is no longer valid" });
      }
    } else if (e.event === "file_written") {
      skipped.push({ seq: e.seq, kind: "file_written", why: `the trace records that ${String(data.path)} was written, not what went into it` });
    } else if (e.event === "clipboard_set") {
      skipped.push({ seq: e.seq, kind: "clipboard_set", why: "the trace records that the clipboard was set, not the text" });
    } else if (e.event === "refused") {
      skipped.push({ seq: e.seq, kind: "refused", why: "the source box refused this batch" });
    } else if (e.event === "ran") {
      const argv = Array.isArray(data.argv) ? (data.argv as string[]) : [];
      if (argv.length) steps.push({ entry: e, step: { type: "exec", what: { argv } } });
    } else if (e.event === "person_input" && data.kind === "click") {
      if (includePerson) {
        const button = data.button === 3 ? "right" : data.button === 2 ? "middle" : "left";
        steps.push({ entry: e, step: { type: "click", at: { x: Number(data.x), y: Number(data.y) }, button } });
      } else {
        skipped.push({ seq: e.seq, kind: "person_click", why: "a person's click during a takeover; fork with include_person to replay it" });
      }
    } else if (e.event === "person_input") {
      skipped.push({ seq: e.seq, kind: `person_${String(data.kind)}`, why: "a person's keys are recorded as a count, never the characters" });
    }
  }
  return { steps, skipped };
}

// What this server knows of a recorded placement; keys an older server wrote and this one does not
// know are left out rather than failing the fork.
const RecordedPlacement = z.object(PlacementSchema.shape);

/**
 * The fork's placement: the given fields over the source's (seed 000: "Default: the original's"),
 * so the runtime, memory and limits carry over unless named (001: "on the same runtime, unless
 * your placement names another"). Never the source's browser profile (001).
 */
export function forkPlacement(recorded: unknown, given: Placement | undefined): Placement {
  if (given && "profile" in given) {
    throw unsupported("placement.profile: a fork never gets a browser profile (it would share the source's logins); launch a box with the profile instead");
  }
  const source: Placement & { profile?: unknown } = validate(RecordedPlacement, recorded ?? {}, "recorded placement");
  delete source.profile;
  return { ...source, ...given };
}

function launchOf(entries: TraceEntry[], given: Placement | undefined) {
  const first = entries.find((e) => e.event === "box_created" || e.event === "adopted");
  if (!first?.data) throw new ApiError("failed", "the trace has no box_created entry to launch the fork from");
  return {
    spec: validate(SpecSchema, first.data.spec ?? {}, "recorded spec"),
    placement: forkPlacement(first.data.placement, given),
  };
}

/** Steps that go to the box as one batch: one recorded batch, or one step of an older trace. */
export interface ReplayBatch {
  screen: number;
  planned: Planned[];
  options: Omit<BatchInput, "actions">;
  /** When the original began and ended (ms): the wait before this batch is the gap before it. */
  began: number;
  ended: number;
}

const MarkSchema = z.object({
  id: z.string().min(1).max(64),
  index: z.number().int().min(0),
  began_ms: z.number(),
  settle_ms: z.unknown().optional(),
  want: z.unknown().optional(),
  keep_going: z.unknown().optional(),
});

/** The batch mark of an `acted` entry, if it has a sound one. */
function markOf(entry: TraceEntry): BatchMark | undefined {
  if (entry.event !== "acted") return undefined;
  const mark = MarkSchema.safeParse(entry.data?.batch);
  return mark.success ? (mark.data as BatchMark) : undefined;
}

/** The recorded batch's options, checked as a batch body is (a bad one replays with none). */
function optionsOf(mark: BatchMark): ReplayBatch["options"] {
  const { settle_ms, want, keep_going } = mark;
  const parsed = BatchSchema.safeParse({ actions: [], settle_ms, want, keep_going });
  if (!parsed.success) return {};
  const { actions: _, ...options } = parsed.data;
  return options;
}

/** Groups planned steps into the batches they were recorded in (consecutive, same mark). */
export function batchesOf(planned: Planned[]): ReplayBatch[] {
  const out: ReplayBatch[] = [];
  let open: { id: string; batch: ReplayBatch } | undefined;
  for (const p of planned) {
    const mark = markOf(p.entry);
    const screen = p.entry.screen ?? 0;
    if (mark && open?.id === mark.id && open.batch.screen === screen) {
      open.batch.planned.push(p);
      continue;
    }
    const at = p.entry.at_ms;
    const batch: ReplayBatch = { screen, planned: [p], options: mark ? optionsOf(mark) : {}, began: mark ? Math.min(mark.began_ms, at) : at, ended: at };
    out.push(batch);
    open = mark ? { id: mark.id, batch } : undefined;
  }
  return out;
}

/** A refusal of a whole batch that names one of its steps (`actions[N] (type): …`, batch.server.ts). */
const STEP_REFUSAL = /^actions\[(\d+)\] \([^)]*\): ([\s\S]*)$/;

/**
 * Sends one batch and counts each step that ran; the seq of the first that failed, or null. A
 * batch refused before it ran (a step the server refuses now, as a secret removed since) counts
 * the step it names as attempted and failed; the report says why and the fork's trace records
 * the refusal. A refusal (4xx) comes from the trace's content, not from a fault of the server's.
 */
async function runReplayBatch(actor: Actor, running: RunningBox, batch: ReplayBatch, report: ReplayReport): Promise<number | null> {
  const steps = batch.planned.map((p) => p.step);
  let results: { ok?: unknown }[] = [];
  try {
    const out = await runBatch(actor, { box: running, screen: batch.screen }, { ...batch.options, actions: steps }, steps);
    results = out.results;
  } catch (err) {
    const message = (err as Error).message;
    const named = STEP_REFUSAL.exec(message);
    const at = named ? Math.min(Number(named[1]), batch.planned.length - 1) : 0;
    const entry = batch.planned[at]!.entry;
    const refusal = err instanceof ApiError && err.status < 500;
    const [first, last] = [batch.planned[0]!.entry.seq, batch.planned.at(-1)!.entry.seq];
    // Refused whole, nothing of the batch ran, the steps before the one named included.
    const whole = first === last ? "" : `; none of its batch (seq ${first}–${last}) ran`;
    report.reason = `the step at seq ${entry.seq} (${batch.planned[at]!.step.type}) ${refusal ? "was refused" : "failed"}: ${named ? named[2] : message}${whole}`;
    if (refusal) log.warn({ box: running.id, seq: entry.seq, err: message }, `fork ${running.id}: replay refused`);
    else log.error({ err }, `fork ${running.id}: replay of seq ${entry.seq} failed`);
    if (refusal && !refusalRecorded.has(err as object)) await recordRefusal(actor, running.id, batch.screen, steps, message).catch((e) => log.error({ box: running.id, err: e }, "recording a refusal failed"));
    report.attempted++;
    return entry.seq;
  }
  let failed: number | null = null;
  results.forEach((r, i) => {
    report.attempted++;
    if (r.ok === true) report.ok++;
    else failed ??= batch.planned[i]?.entry.seq ?? null;
  });
  return failed;
}

async function replay(actor: Actor, box: BoxJson, planned: Planned[], skipped: Skipped[]): Promise<ReplayReport> {
  const report: ReplayReport = { attempted: 0, ok: 0, stopped_at: null, truncated: false, skipped };
  try {
    await replaySteps(actor, box, planned, report);
  } catch (err) {
    await endReplay(box.id, { ...report, reason: `the replay could not go on: ${(err as Error).message}` });
    throw err;
  }
  await endReplay(box.id, report);
  return report;
}

async function replaySteps(actor: Actor, box: BoxJson, planned: Planned[], report: ReplayReport): Promise<void> {
  const started = Date.now();
  const running = await requireRunningBox(actor, box.id);
  let lastEnded: number | undefined;
  for (const batch of batchesOf(planned)) {
    if (Date.now() - started > TIME_LIMIT_MS) {
      report.truncated = true;
      break;
    }
    if (lastEnded !== undefined) {
      const gap = Math.min(Math.max(0, batch.began - lastEnded), MAX_GAP_MS);
      if (gap > 0) await new Promise((r) => setTimeout(r, gap));
    }
    lastEnded = batch.ended;
    // A step that failed ends the replay once its batch is done (with keep_going, it went on).
    report.stopped_at = await runReplayBatch(actor, running, batch, report);
    stepReplay(box.id, report);
    if (report.stopped_at !== null) break;
  }
  // The end state, for comparing with the source's last frame.
  for (let s = 0; s < running.screens; s++) await sampleSoon(running, s, "agent", 300);
}

export async function forkBox(
  actor: Actor,
  sourceId: string,
  input: ForkInput,
  opts: { queue: boolean },
): Promise<{ box: BoxJson; replay: ReplayReport; queued: boolean }> {
  if (input.mode === "snapshot") throw unsupported("fork by snapshot is not supported: a fork replays the trace (mode: replay)");
  const source = await traceBox(actor, sourceId);
  // "A box that is starting or failed refuses other calls with 409" (000); a removed one still forks.
  await refuseUnsettled(source.id);
  const entries = await entriesOf(source.id, input.up_to);
  const { spec, placement } = launchOf(entries, input.placement);
  const { steps, skipped } = plan(entries, input.include_person ?? false);
  const { box } = await createBox(actor, { spec, placement }, { queue: opts.queue });
  const who = await attribution(actor);
  // Known as a fork in memory before its trace says so (forkOf reads the trace otherwise).
  beginReplay(box.id, box.owner ?? null, { box: source.id, up_to: input.up_to ?? null }, steps.length, skipped);
  await recordEntry(box.id, {
    actor: who.actor,
    event: "forked_from",
    data: { box: source.id, up_to: input.up_to ?? null, steps: steps.length, ...who.data },
  });
  const empty: ReplayReport = { attempted: 0, ok: 0, stopped_at: null, truncated: false, skipped: [] };
  if (opts.queue) {
    // Queued: answer 202 now; the replay runs once the box is ready.
    enqueue("fork", box.id, async () => {
      const state = await waitUntilSettled(box.id);
      if (state === "ready") await replay(actor, box, steps, skipped);
      else await endReplay(box.id, { ...empty, skipped, reason: state === "starting" ? "the box took too long to start" : `the box did not start (${state})` });
    });
    return { box, replay: empty, queued: true };
  }
  return { box, replay: await replay(actor, box, steps, skipped), queued: false };
}
