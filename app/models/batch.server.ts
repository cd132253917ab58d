import { z } from "zod";
import { agentCall } from "~/protocol/agent";
import { textProblem } from "~/protocol/keys";
import { withClusterLock } from "~/utils/cluster.server";
import { noteTyped } from "./secret-mask.server";
import { ApiError, badRequest } from "~/utils/api-error.server";
import { log } from "~/utils/log.server";
import { observeBatch } from "~/utils/metrics.server";
import { validate } from "~/utils/validate.server";
import { BatchSchema, STEP_TYPES, type Step, StepSchema, type WireStep } from "./action-schema.server";
import type { Actor } from "./actor";
import { loadRow } from "./box-record.server";
import { CATALOG, catalogApp } from "./catalog.server";
import { recordBatch, recordRefusal } from "./recorder.server";
import { type RecordState, noteRecordingStarted, noteRecordingStopped } from "./recording.server";
import { type ScreenTarget, callAgent } from "./screen.server";
import type { TabMemo } from "./page-browser.server";
import { isPageStep, runPageStep } from "./page-steps.server";
import { secretValue } from "./secret-store.server";
import { assertMayRunSteps } from "./takeover.server";

export type BatchInput = z.infer<typeof BatchSchema>;

/** Prefixes a validation message with the step it concerns; whether it is retryable stays the error's. */
function stepError(i: number, type: string, e: unknown): never {
  if (e instanceof ApiError) throw new ApiError(e.code, `actions[${i}] (${type}): ${e.message}`, { retryable: e.retryable });
  throw e;
}

/**
 * Validates the batch, then each step on its own so a refusal names the step: a malformed step
 * refuses the whole batch before anything runs. A well-formed step of a kind not built yet (pages
 * by element, native widgets) passes: the box answers it `unsupported` when its turn comes.
 */
export function validateBatch(body: unknown): { input: BatchInput; steps: Step[] } {
  const input = validate(BatchSchema, body, "body");
  const steps = input.actions.map((raw, i) => {
    const type = (raw as { type?: unknown } | null)?.type;
    if (typeof type !== "string") throw badRequest(`actions[${i}]: each action needs a "type"`);
    if (!STEP_TYPES.has(type)) throw badRequest(`actions[${i}]: unknown action type "${type}"`);
    try {
      return validate(StepSchema, raw, "action");
    } catch (e) {
      return stepError(i, type, e);
    }
  });
  return { input, steps };
}

// Batches on one screen run one after another; different screens run side by side. In this
// server, in order; across several servers (docs/decisions/0021), one at a time under a lock in
// Redis whose holder renews its lease, so a server that dies holding it frees it in seconds.
const screenChains = new Map<string, Promise<unknown>>();
function onScreen<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const prev = screenChains.get(key) ?? Promise.resolve();
  const next = prev.catch(() => {}).then(() => withClusterLock(`screen:${key}`, fn));
  screenChains.set(key, next);
  void next
    .finally(() => {
      if (screenChains.get(key) === next) screenChains.delete(key);
    })
    .catch(() => {});
  return next;
}

/** Installed state of every catalog app, for the `apps` step and route. */
export async function catalogStatus(t: Pick<ScreenTarget, "box">) {
  const packages = CATALOG.flatMap((a) => a.packages);
  const res = await callAgent<{ code: number; stdout: string }>(t.box, agentCall("exec", {}), {
    argv: ["dpkg-query", "-W", "-f=${Package} ${db:Status-Status}\\n", ...packages],
    timeout_ms: 10_000,
  });
  const installed = new Set(
    res.stdout
      .split("\n")
      .filter((l) => l.endsWith(" installed"))
      .map((l) => l.split(" ")[0]),
  );
  return CATALOG.map((a) => ({
    name: a.name,
    installed: a.preinstalled || (a.packages.length > 0 && a.packages.every((p) => installed.has(p))),
  }));
}

/**
 * The agent's form of a step (WireStepSchema): catalog names become argv; `apps` is answered by
 * the server, so the box gets a step that does nothing in its place (results keep their indexes);
 * a `type` with `secret_ref` carries the secret's value (`secrets`, looked up before), in this
 * copy only.
 */
export function forAgent(
  step: Step,
  i: number,
  secrets: ReadonlyMap<string, string> = new Map(),
  boxApps: Readonly<Record<string, { argv: string[] }>> = {},
): WireStep {
  if (step.type === "launch") {
    // The box's own apps (spec.apps) first: the catalog refuses their names (spec.server.ts).
    const app = Object.hasOwn(boxApps, step.app) ? boxApps[step.app] : catalogApp(step.app);
    if (!app) throw new ApiError("not_found", `actions[${i}] (launch): no app "${step.app}" in the catalog or the box's spec.apps`);
    return { type: "launch", argv: [...app.argv, ...(step.args ?? [])] };
  }
  if (step.type === "apps") return { type: "wait", ms: 0 };
  if (step.type === "type") {
    const text = step.secret_ref !== undefined ? secrets.get(step.secret_ref) : step.text;
    if (text === undefined) throw new ApiError("internal", `actions[${i}] (type): its secret was not looked up`);
    return { type: "type", text, ...(step.delay_ms !== undefined && { delay_ms: step.delay_ms }) };
  }
  return step;
}

/** The secret a step names: a `type`'s or an `on_page` `fill`'s `secret_ref`. */
function secretRefOf(s: Step): string | undefined {
  if (s.type === "type") return s.secret_ref;
  if (s.type === "on_page" && s.what.op === "fill") return s.what.secret_ref;
  return undefined;
}

/**
 * The values of the secrets the steps name, from the box's workspace, in step order: a name the
 * workspace lacks, or a value a `type` cannot type, refuses the batch before anything runs (a
 * `fill` looks its value up again when it runs).
 */
async function typedSecrets(owner: string | null, steps: Step[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const [i, s] of steps.entries()) {
    const name = secretRefOf(s);
    if (name === undefined) continue;
    try {
      const value = out.get(name) ?? (await secretValue(owner, name));
      out.set(name, value);
      const problem = s.type === "type" ? textProblem(value) : null;
      // Names the character's code only, never the value.
      if (problem) throw badRequest(`the value of secret "${name}" cannot be typed: ${problem}`);
    } catch (e) {
      stepError(i, s.type, e);
    }
  }
  return out;
}

const BATCH_TIMEOUT_MS = 12 * 60_000;

export interface BatchResult {
  results: Record<string, unknown>[];
  stopped_at: number | null;
  windows: unknown[];
  tabs: unknown[];
  [key: string]: unknown;
}

/** Where a batch's time went, for the Server-Timing header (ms). */
export interface BatchTimings {
  box: number;
  trace: number;
}

/** A run of steps the agent does in one call, or one page step the server does. */
type Part = { kind: "agent"; from: number; to: number } | { kind: "page"; at: number };

function partsOf(steps: Step[]): Part[] {
  const parts: Part[] = [];
  steps.forEach((s, i) => {
    const last = parts[parts.length - 1];
    if (isPageStep(s)) parts.push({ kind: "page", at: i });
    else if (last?.kind === "agent") last.to = i + 1;
    else parts.push({ kind: "agent", from: i, to: i + 1 });
  });
  return parts;
}

/**
 * Page steps that change nothing the agent's closing call reads (frame, windows, tabs). Not a
 * page_shot: a full-page capture may lay the page out anew while it runs.
 */
function readsOnly(part: Part, steps: Step[]): boolean {
  if (part.kind !== "page") return false;
  const s = steps[part.at]!;
  return s.type === "snapshot" || s.type === "read" || (s.type === "look" && !s.what.scroll);
}

/**
 * Runs the steps in order: runs of box steps in the agent, page steps here. The agent's last
 * call (possibly with no steps) lets go of what the batch held and reports frame, windows and
 * tabs, so a batch answers the same whatever it mixes; when the batch ends with page steps that
 * only read the page, it runs alongside them.
 */
async function runParts(
  actor: Actor,
  t: ScreenTarget,
  input: BatchInput,
  steps: Step[],
  actions: WireStep[],
): Promise<BatchResult> {
  const results: Record<string, unknown>[] = [];
  let stopped: number | null = null;
  let continued = false;
  const agentPart = (from: number, to: number, last: boolean) => {
    const body = last
      ? { ...input, actions: actions.slice(from, to), index_base: from, continued }
      : { actions: actions.slice(from, to), keep_going: input.keep_going, index_base: from, continued, continues: true };
    continued = true;
    return callAgent<BatchResult>(t.box, agentCall("batch", { n: t.screen }), body, BATCH_TIMEOUT_MS, "bulk");
  };
  const parts = partsOf(steps);
  // The screen's tabs as listed for a run of page steps; an agent part may change them.
  const memo: TabMemo = {};
  // Page steps at the end that only read the page run alongside the closing call.
  let readsFrom = parts.length;
  while (readsFrom > 0 && readsOnly(parts[readsFrom - 1]!, steps)) readsFrom--;
  let closing: Promise<BatchResult> | undefined;
  for (const [k, part] of parts.entries()) {
    if (k === readsFrom) {
      closing = agentPart(steps.length, steps.length, true);
      closing.catch(() => undefined); // awaited below; not an unhandled rejection meanwhile
    }
    if (part.kind === "agent") {
      const isLast = k === parts.length - 1;
      memo.tabs = undefined;
      const r = await agentPart(part.from, part.to, isLast);
      results.push(...r.results);
      if (isLast) return { ...r, results, stopped_at: r.stopped_at };
      if (r.stopped_at !== null) {
        stopped = r.stopped_at;
        break;
      }
      continue;
    }
    const step = steps[part.at]!;
    try {
      // A person may have taken the screen since the batch began.
      assertMayRunSteps(actor, t.box.id, t.screen, [step]);
      results.push({ ok: true, ...(await runPageStep(t, step, memo)) });
    } catch (e) {
      const err = e instanceof ApiError ? e : new ApiError("internal", "the step failed");
      if (!(e instanceof ApiError)) log.error({ box: t.box.id, step: step.type, err: e }, "page step failed");
      results.push({ ok: false, code: err.code, message: `step ${part.at} (${step.type}): ${err.message}` });
      if (!input.keep_going) {
        stopped = part.at;
        break;
      }
    }
  }
  // The closing call: no steps, the batch's want/settle; lets go of holds, reads frame and tabs.
  const end = await (closing ?? agentPart(steps.length, steps.length, true));
  return { ...end, results, stopped_at: stopped };
}

export async function runBatch(
  actor: Actor,
  t: ScreenTarget,
  input: BatchInput,
  steps: Step[],
  timings: BatchTimings = { box: 0, trace: 0 },
): Promise<BatchResult> {
  // The batch histogram (holm_batch_duration_seconds) times the whole batch, refusals included.
  const t0 = performance.now();
  try {
    return await runBatchNow(actor, t, input, steps, timings);
  } finally {
    observeBatch(steps.map((s) => s.type), (performance.now() - t0) / 1000);
  }
}

/** Refusals this module has already written to the box's trace (a caller must not write them again). */
export const refusalRecorded = new WeakSet<object>();

async function runBatchNow(actor: Actor, t: ScreenTarget, input: BatchInput, steps: Step[], timings: BatchTimings): Promise<BatchResult> {
  const appsAt = steps.flatMap((s, i) => (s.type === "apps" ? [i] : []));
  const guard = () => {
    try {
      assertMayRunSteps(actor, t.box.id, t.screen, steps);
    } catch (err) {
      if (err instanceof Error) refusalRecorded.add(err);
      void recordRefusal(actor, t.box.id, t.screen, steps, (err as Error).message).catch((e) =>
        log.error({ box: t.box.id, err: e }, "recording a refusal failed"),
      );
      throw err;
    }
  };
  guard();
  const secrets = await typedSecrets(t.box.owner, steps);
  for (const v of new Set(secrets.values())) await noteTyped(t.box.id, v);
  const boxApps = steps.some((s) => s.type === "launch") ? await appsOf(t.box.id) : {};
  const actions = steps.map((s, i) => forAgent(s, i, secrets, boxApps));
  const apps = appsAt.length ? await catalogStatus(t) : undefined;
  let began_ms = Date.now();
  const result = await onScreen(`${t.box.id}/${t.screen}`, () => {
    // Checked again once the screen is ours: a person may have taken it while we queued.
    guard();
    began_ms = Date.now();
    const t0 = performance.now();
    const run = steps.some(isPageStep)
      ? runParts(actor, t, input, steps, actions)
      : callAgent<BatchResult>(t.box, agentCall("batch", { n: t.screen }), { ...input, actions }, BATCH_TIMEOUT_MS, "bulk");
    return run.finally(() => (timings.box = performance.now() - t0));
  });
  for (const i of appsAt) {
    if (result.results[i]?.ok) result.results[i] = { ok: true, apps };
  }
  // What the agent says of typing a secret (its length, a character it could not type) is not
  // passed on: the answer names the secret only.
  steps.forEach((s, i) => {
    const r = result.results[i];
    if (s.type !== "type" || s.secret_ref === undefined || !r) return;
    result.results[i] = r.ok
      ? { ok: true, secret_ref: s.secret_ref }
      : { ok: false, code: r.code, message: `step ${i} (type): typing secret "${s.secret_ref}" did not succeed` };
  });
  result.tabs ??= [];
  // Entries are committed before the answer goes out (a crash after it loses nothing); the
  // frame entry, when the screen changed, follows in the background.
  const frame = result.frame as { hash?: string; png_base64?: string } | undefined;
  const t1 = performance.now();
  const { settle_ms, want, keep_going } = input;
  await recordBatch(actor, t.box, t.screen, steps, result.results as { ok?: boolean; code?: string }[], frame, { began_ms, settle_ms, want, keep_going });
  await noteRecordSteps(actor, t, steps, result.results as unknown as (RecordState & { ok?: boolean })[]);
  timings.trace = performance.now() - t1;
  return result;
}

/** The apps of a box's spec (`spec.apps`), by name. */
async function appsOf(boxId: string): Promise<Record<string, { argv: string[] }>> {
  const row = await loadRow(boxId);
  return row ? ((JSON.parse(row.spec_json) as { apps?: Record<string, { argv: string[] }> }).apps ?? {}) : {};
}

/** A batch's `record` steps that started or stopped a recording mark it in the trace (recording.server.ts). */
async function noteRecordSteps(actor: Actor, t: ScreenTarget, steps: Step[], results: (RecordState & { ok?: boolean })[]) {
  for (const [i, s] of steps.entries()) {
    const r = results[i];
    if (s.type !== "record" || !r || r.ok === false) continue;
    if (s.what.do === "start") await noteRecordingStarted(t.box, t.screen, r, actor);
    else if (s.what.do === "stop") await noteRecordingStopped(t.box, t.screen, r, actor, true);
  }
}

/** Installs catalog apps in a running box with apt (needs a box with network). */
export async function installApps(box: ScreenTarget["box"], names: string[]) {
  const unknown = names.filter((n) => !catalogApp(n));
  if (unknown.length) throw new ApiError("not_found", `not in the catalog: ${unknown.join(", ")}`);
  const packages = [...new Set(names.flatMap((n) => catalogApp(n)!.packages))];
  if (packages.length) {
    const env = { DEBIAN_FRONTEND: "noninteractive" };
    const update = await callAgent<{ code: number; stderr: string }>(box, agentCall("exec", {}), {
      argv: ["apt-get", "update", "-q"],
      env,
      timeout_ms: 300_000,
    }, 320_000, "bulk");
    if (update.code !== 0) throw new ApiError("failed", `apt-get update failed: ${update.stderr.slice(-500)}`);
    const install = await callAgent<{ code: number; stderr: string }>(box, agentCall("exec", {}), {
      argv: ["apt-get", "install", "-qy", "--no-install-recommends", ...packages],
      env,
      timeout_ms: 600_000,
    }, 620_000, "bulk");
    if (install.code !== 0) throw new ApiError("failed", `apt-get install failed: ${install.stderr.slice(-500)}`);
  }
  return { installed: names, apps: await catalogStatus({ box }) };
}
