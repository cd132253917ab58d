import { z } from "zod";
import { ApiError, unsupported } from "~/utils/api-error.server";
import type { Actor } from "~/utils/auth.server";
import { validate } from "~/utils/route.server";
import { type Step, StepSchema } from "./action-schema.server";
import { runBatch } from "./batch.server";
import { type BoxJson, createBox, requireRunningBox, waitUntilSettled } from "./box.server";
import { sampleSoon } from "./recorder.server";
import { PlacementSchema, SpecSchema } from "./spec.server";
import { type TraceEntry, readTrace, recordEntry, traceBox } from "./trace.server";

// Fork by replay: a new box from the source's spec and placement, then the recorded steps again,
// in order, at about the original speed. It copies no memory or disk, so it can differ.

export const ForkSchema = z.strictObject({
  mode: z.enum(["replay", "snapshot"]).optional(),
  up_to: z.number().int().min(0).optional(),
  placement: PlacementSchema.optional(),
  include_person: z.boolean().optional(),
});
export type ForkInput = z.infer<typeof ForkSchema>;

const MAX_GAP_MS = 2000;
const TIME_LIMIT_MS = 3 * 60_000;

export interface Skipped {
  seq: number;
  kind: string;
  why: string;
}

export interface ReplayReport {
  attempted: number;
  ok: number;
  stopped_at: number | null;
  truncated: boolean;
  skipped: Skipped[];
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

interface Planned {
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

function launchOf(entries: TraceEntry[]) {
  const first = entries.find((e) => e.event === "box_created" || e.event === "adopted");
  if (!first?.data) throw new ApiError("failed", "the trace has no box_created entry to launch the fork from");
  return {
    spec: validate(SpecSchema, first.data.spec ?? {}, "recorded spec"),
    placement: validate(PlacementSchema, first.data.placement ?? {}, "recorded placement"),
  };
}

async function replay(actor: Actor, box: BoxJson, planned: Planned[], skipped: Skipped[]): Promise<ReplayReport> {
  const report: ReplayReport = { attempted: 0, ok: 0, stopped_at: null, truncated: false, skipped };
  const started = Date.now();
  const running = await requireRunningBox(actor, box.id);
  let lastAt: number | undefined;
  for (const { entry, step } of planned) {
    if (Date.now() - started > TIME_LIMIT_MS) {
      report.truncated = true;
      break;
    }
    if (lastAt !== undefined) {
      const gap = Math.min(Math.max(0, entry.at_ms - lastAt), MAX_GAP_MS);
      if (gap > 0) await new Promise((r) => setTimeout(r, gap));
    }
    lastAt = entry.at_ms;
    report.attempted++;
    const screen = entry.screen ?? 0;
    let ok = false;
    try {
      const out = await runBatch(actor, { box: running, screen }, { actions: [step] }, [step]);
      ok = out.results[0]?.ok === true;
    } catch (err) {
      console.error(`[holm] fork ${box.id}: replay of seq ${entry.seq} failed:`, (err as Error).message);
    }
    if (!ok) {
      report.stopped_at = entry.seq;
      break;
    }
    report.ok++;
  }
  // The end state, for comparing with the source's last frame.
  for (let s = 0; s < running.screens; s++) await sampleSoon(running, s, "agent", 300);
  return report;
}

export async function forkBox(
  actor: Actor,
  sourceId: string,
  input: ForkInput,
  opts: { queue: boolean },
): Promise<{ status: number; body: { box: BoxJson; replay: ReplayReport } }> {
  if (input.mode === "snapshot") throw unsupported("fork by snapshot is not supported: a fork replays the trace (mode: replay)");
  const source = await traceBox(actor, sourceId);
  const entries = await entriesOf(source.id, input.up_to);
  const { spec, placement } = launchOf(entries);
  const { steps, skipped } = plan(entries, input.include_person ?? false);
  const { box } = await createBox(actor, { spec, placement: input.placement ?? placement }, { queue: opts.queue });
  await recordEntry(box.id, { actor: "server", event: "forked_from", data: { box: source.id, up_to: input.up_to ?? null } });
  const empty: ReplayReport = { attempted: 0, ok: 0, stopped_at: null, truncated: false, skipped: [] };
  if (opts.queue) {
    // Queued: answer 202 now; the replay runs once the box is ready.
    void (async () => {
      if ((await waitUntilSettled(box.id)) === "ready") await replay(actor, box, steps, skipped);
    })().catch((err) => console.error(`[holm] queued fork ${box.id} failed:`, err));
    return { status: 202, body: { box, replay: empty } };
  }
  return { status: 200, body: { box, replay: await replay(actor, box, steps, skipped) } };
}
