import { MAX_WAIT_MS } from "~/protocol/action-fields";
import { ApiError } from "~/utils/api-error.server";
import { type TabPage, pageState } from "./page-browser.server";
import { cdpSend, inWorld } from "./page-content-world.server";
import { cutText } from "~/utils/cut-text";

// `evaluate` (seed 000: POST …/page/evaluate, the `evaluate` step): a JavaScript expression run in
// the page's own context, as the page's scripts see it, through Playwright (which awaits a
// returned promise and brings back dates, cycles and DOM nodes as values). A thrown exception is
// the seed's `failed` (422, "The action ran and did not succeed") with the exception's message:
// 004 answers 200 with `is_error` instead, but in 000 a step that did not succeed is a refusal,
// so a batch stops there (or goes on with `keep_going`) as for any other step.

export interface EvaluateQuery {
  expression: string;
  timeout_ms?: number;
  limit?: number;
}

/** "`timeout_ms` defaults to 5000 and stops at 30 seconds" (000). */
export const DEFAULT_EVALUATE_MS = 5000;
/** Characters of the value's JSON an answer holds when no `limit` is given. */
export const DEFAULT_EVALUATE_LIMIT = 1_000_000;

export async function evaluate(tp: TabPage, q: EvaluateQuery): Promise<Record<string, unknown>> {
  const { page } = tp;
  const timeoutMs = Math.min(q.timeout_ms ?? DEFAULT_EVALUATE_MS, MAX_WAIT_MS);
  let timer: NodeJS.Timeout | undefined;
  const run = page.evaluate(q.expression);
  const expired = new Promise<"expired">((resolve) => (timer = setTimeout(() => resolve("expired"), timeoutMs)));
  let value: unknown;
  try {
    const r = await Promise.race([run.then((v) => ({ v })), expired]);
    if (r === "expired") {
      run.catch(() => undefined);
      await stopRunaway(tp);
      throw new ApiError("timeout", `the expression did not finish within ${timeoutMs} ms`, { retryable: false });
    }
    value = r.v;
  } catch (e) {
    if (e instanceof ApiError) throw e;
    if (page.isClosed()) throw new ApiError("not_found", `tab ${tp.tab.id} closed while the expression ran`);
    throw new ApiError("failed", `the expression threw: ${exceptionText(e as Error)}`);
  } finally {
    clearTimeout(timer);
  }
  return cutJson(toJson(value), q.limit ?? DEFAULT_EVALUATE_LIMIT);
}

/** Playwright's message, less its prefix and the stack: "Error: bad thing". */
function exceptionText(e: Error): string {
  const first = (e.message ?? String(e)).split("\n")[0] ?? "";
  return cutText(first.replace(/^page\.evaluate: /, ""), 2000);
}

/**
 * An expression still running when its time is up: a script stuck in a loop holds the page's
 * only thread (nothing else in the tab would run again), so it is stopped; one that waits on a
 * promise holds nothing and is left (stopping then would kill the page's next script instead).
 * The page's thread is free when our world answers at once.
 */
async function stopRunaway(tp: TabPage): Promise<void> {
  // A script waiting on a dialog goes on once it is answered or dismissed: it is not stuck.
  if (pageState(tp.page).dialog) return;
  const free = await Promise.race([
    inWorld(tp.page, "1").then(() => true, () => true),
    new Promise<boolean>((r) => setTimeout(() => r(false), 1000).unref()),
  ]);
  if (!free) await cdpSend(tp.page, "Runtime.terminateExecution").catch(() => undefined);
}

const MAX_DEPTH = 200;

/**
 * The value as JSON can hold it: undefined, functions and symbols become null, a bigint its
 * digits, a regular expression its source, an Error its name and message, a cycle "[Circular]".
 */
export function toJson(v: unknown, path: object[] = []): unknown {
  switch (typeof v) {
    case "undefined":
    case "function":
    case "symbol":
      return null;
    case "bigint":
      return v.toString();
    case "number":
      return Number.isFinite(v) ? v : null;
    case "string":
    case "boolean":
      return v;
  }
  if (v === null) return null;
  const o = v as object;
  if (o instanceof Date) return Number.isNaN(o.getTime()) ? null : o.toISOString();
  if (o instanceof RegExp) return String(o);
  if (o instanceof Error) return { name: o.name, message: o.message };
  if (path.includes(o)) return "[Circular]";
  if (path.length >= MAX_DEPTH) return "[Too deep]";
  const inner = [...path, o];
  if (Array.isArray(o)) return o.map((x) => toJson(x, inner));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(o)) if (x !== undefined) out[k] = toJson(x, inner);
  return out;
}

/**
 * `{value, cut}`: the value, or, when its JSON is longer than `limit` characters, a string cut
 * to `limit`: a string value's first characters, any other value's JSON text.
 */
export function cutJson(value: unknown, limit: number): { value: unknown; cut: boolean } {
  if (typeof value === "string") return value.length > limit ? { value: value.slice(0, limit), cut: true } : { value, cut: false };
  const text = JSON.stringify(value) ?? "null";
  return text.length > limit ? { value: text.slice(0, limit), cut: true } : { value, cut: false };
}
