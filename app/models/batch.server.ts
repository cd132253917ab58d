import { z } from "zod";
import { agentCall } from "~/protocol/agent";
import { ApiError, badRequest } from "~/utils/api-error.server";
import { validate } from "~/utils/validate.server";
import { BatchSchema, STEP_TYPES, type Step, StepSchema, type WireStep } from "./action-schema.server";
import type { Actor } from "./actor";
import { CATALOG, catalogApp } from "./catalog.server";
import { recordBatch, recordRefusal } from "./recorder.server";
import { type ScreenTarget, callAgent } from "./screen.server";
import { assertMayRunSteps } from "./takeover.server";

export type BatchInput = z.infer<typeof BatchSchema>;

/** Prefixes a validation message with the step it concerns. */
function stepError(i: number, type: string, e: unknown): never {
  if (e instanceof ApiError) throw new ApiError(e.code, `actions[${i}] (${type}): ${e.message}`);
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

// Batches on one screen run one after another; different screens run side by side.
const screenChains = new Map<string, Promise<unknown>>();
function onScreen<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const prev = screenChains.get(key) ?? Promise.resolve();
  const next = prev.catch(() => {}).then(fn);
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
 * the server, so the box gets a step that does nothing in its place (results keep their indexes).
 */
export function forAgent(step: Step, i: number): WireStep {
  if (step.type === "launch") {
    const app = catalogApp(step.app);
    if (!app) throw new ApiError("not_found", `actions[${i}] (launch): no app "${step.app}" in the catalog`);
    return { type: "launch", argv: [...app.argv, ...(step.args ?? [])] };
  }
  if (step.type === "apps") return { type: "wait", ms: 0 };
  return step;
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

export async function runBatch(
  actor: Actor,
  t: ScreenTarget,
  input: BatchInput,
  steps: Step[],
  timings: BatchTimings = { box: 0, trace: 0 },
): Promise<BatchResult> {
  const actions = steps.map(forAgent);
  const appsAt = steps.flatMap((s, i) => (s.type === "apps" ? [i] : []));
  const guard = () => {
    try {
      assertMayRunSteps(actor, t.box.id, t.screen, steps);
    } catch (err) {
      void recordRefusal(t.box.id, t.screen, steps, (err as Error).message).catch((e) =>
        console.error("[holm] recording a refusal failed:", e),
      );
      throw err;
    }
  };
  guard();
  const apps = appsAt.length ? await catalogStatus(t) : undefined;
  let began_ms = Date.now();
  const result = await onScreen(`${t.box.id}/${t.screen}`, () => {
    // Checked again once the screen is ours: a person may have taken it while we queued.
    guard();
    began_ms = Date.now();
    const t0 = performance.now();
    return callAgent<BatchResult>(t.box, agentCall("batch", { n: t.screen }), { ...input, actions }, BATCH_TIMEOUT_MS, "bulk").finally(
      () => (timings.box = performance.now() - t0),
    );
  });
  for (const i of appsAt) {
    if (result.results[i]?.ok) result.results[i] = { ok: true, apps };
  }
  result.tabs ??= [];
  // Entries are committed before the answer goes out (a crash after it loses nothing); the
  // frame entry, when the screen changed, follows in the background.
  const frame = result.frame as { hash?: string; png_base64?: string } | undefined;
  const t1 = performance.now();
  const { settle_ms, want, keep_going } = input;
  await recordBatch(t.box, t.screen, steps, result.results as { ok?: boolean; code?: string }[], frame, { began_ms, settle_ms, want, keep_going });
  timings.trace = performance.now() - t1;
  return result;
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
