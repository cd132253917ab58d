import type { Locator, Page, Request } from "playwright-core";
import type { z } from "zod";
import type { ElementOpSchema } from "~/protocol/page-actions";
import { ApiError, badRequest } from "~/utils/api-error.server";
import { type AriaNode, type RefState, type SnapElement, ariaTree, byRef, issue, toElement } from "./page-element-snap.server";
import { candidates, failure, isRef, nodeOf, unknownRef } from "./page-element-target.server";

// `wait_for` and "quiet" (no DOM change and no request in flight for a while). Text and selector
// queries are Playwright locators polled for a visible (and, with `enabled`, enabled) match; a
// ref is looked for in a fresh snapshot each round, since Playwright only resolves refs of the
// elements its latest snapshot saw.

type WaitOp = Extract<z.infer<typeof ElementOpSchema>, { op: "wait_for" }>;

export const DEFAULT_WAIT_FOR_MS = 10_000;
const POLL_MS = 100;
/** A request older than this no longer keeps the page from being quiet (long polls, streams). */
const STALE_REQUEST_MS = 5000;

interface NetState {
  inflight: Map<Request, number>;
  last: number;
}
const nets = new WeakMap<Page, NetState>();

/** The page's requests in flight, watched from the first time anyone asks. */
function netOf(page: Page): NetState {
  let n = nets.get(page);
  if (!n) {
    const s: NetState = { inflight: new Map(), last: 0 };
    page.on("request", (r) => {
      s.inflight.set(r, Date.now());
      s.last = Date.now();
    });
    const done = (r: Request) => {
      s.inflight.delete(r);
      s.last = Date.now();
    };
    page.on("requestfinished", done);
    page.on("requestfailed", done);
    nets.set(page, (n = s));
  }
  return n;
}

function busy(net: NetState): boolean {
  const now = Date.now();
  for (const [r, at] of net.inflight) {
    if (now - at > STALE_REQUEST_MS) net.inflight.delete(r);
  }
  return net.inflight.size > 0;
}

/** In the page: resolves true once the DOM has not changed for `quiet` ms, false at `max` ms. */
function domQuiet({ quiet, max }: { quiet: number; max: number }): Promise<boolean> {
  return new Promise((resolve) => {
    let timer: ReturnType<typeof setTimeout>;
    const obs = new MutationObserver(() => {
      clearTimeout(timer);
      timer = setTimeout(() => end(true), quiet);
    });
    const end = (ok: boolean) => {
      obs.disconnect();
      clearTimeout(timer);
      clearTimeout(cap);
      resolve(ok);
    };
    const cap = setTimeout(() => end(false), max);
    obs.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    timer = setTimeout(() => end(true), quiet);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until neither the DOM nor the network has moved for `quietMs`; false if not within `withinMs`. */
export async function waitQuiet(page: Page, quietMs: number, withinMs: number): Promise<boolean> {
  const net = netOf(page);
  const deadline = Date.now() + withinMs;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) return false;
    let dom = false;
    try {
      dom = await page.evaluate(domQuiet, { quiet: quietMs, max: left });
    } catch {
      // The document changed under the wait (a navigation): that is not quiet; go round again.
      await sleep(Math.min(POLL_MS, Math.max(0, deadline - Date.now())));
      continue;
    }
    if (dom && !busy(net) && Date.now() - net.last >= quietMs) return true;
    await sleep(Math.min(POLL_MS, Math.max(0, deadline - Date.now())));
  }
}

function expired(what: string, ms: number): ApiError {
  return new ApiError("timeout", `wait_for: ${what} within ${ms} ms`);
}

/** Whether one query is satisfied now: a visible (enabled) match, or none with `gone`. */
async function holds(
  q: string,
  loc: Locator | undefined,
  tree: Map<string, AriaNode> | undefined,
  op: WaitOp,
): Promise<boolean> {
  let present: boolean;
  if (loc === undefined) {
    const n = tree?.get(q);
    present = !!n && (!op.enabled || !n.disabled);
  } else {
    const visible = loc.filter({ visible: true });
    present = (await visible.count()) > 0 && (!op.enabled || (await visible.first().isEnabled({ timeout: 1000 }).catch(() => false)));
  }
  return op.gone ? !present : present;
}

/** `wait_for`: the page's load state, then a query (or one of `or`), then `until`, then quiet. */
export async function waitFor(page: Page, st: RefState, op: WaitOp): Promise<Record<string, unknown>> {
  const within = op.within_ms ?? DEFAULT_WAIT_FOR_MS;
  const started = Date.now();
  const deadline = started + within;
  // Playwright reads a timeout of 0 as "none": never pass it one.
  const left = () => Math.max(1, deadline - Date.now());
  const or = op.or === undefined ? [] : Array.isArray(op.or) ? op.or : [op.or];
  const queries = [...(op.query === undefined ? [] : [op.query]), ...or];
  if (!queries.length && op.load === undefined && op.until === undefined && op.quiet_ms === undefined) {
    throw badRequest("wait_for needs something to wait for: `query` (or `or`), `load`, `until` or `quiet_ms`");
  }
  if ((op.enabled || op.gone) && !queries.length) throw badRequest("`enabled` and `gone` go with a `query`");
  const out: Record<string, unknown> = {};

  if (op.load !== undefined && op.load !== false) {
    const state = op.load === true ? "load" : op.load;
    try {
      await page.waitForLoadState(state, { timeout: left() });
    } catch (err) {
      if ((err as Error).name === "TimeoutError") throw expired(`the page did not reach "${state}"`, within);
      throw failure(err, `waiting for "${state}"`, st);
    }
  }

  if (queries.length) {
    const gen = st.gen;
    for (const q of queries) if (isRef(q) && !st.known.has(q)) throw unknownRef(q);
    const locs = queries.map((q) => {
      if (isRef(q)) return undefined;
      return candidates(page, q, op.exact ?? false)
        .map((c) => c.loc)
        .reduce((a, b) => a.or(b));
    });
    const withRefs = queries.some(isRef);
    let matched = -1;
    let tree: Map<string, AriaNode> | undefined;
    for (;;) {
      try {
        tree = withRefs ? byRef(await ariaTree(page, false)) : undefined;
        if (withRefs && st.gen !== gen) throw unknownRef(queries.find(isRef)!);
        const now = await Promise.all(queries.map((q, i) => holds(q, locs[i], tree, op)));
        matched = now.indexOf(true);
      } catch (err) {
        // A navigation in the middle of a round: the next round looks at the new page.
        const e = failure(err, "waiting", st);
        if (e.code !== "failed" || !e.retryable) throw e;
      }
      if (matched >= 0) break;
      if (Date.now() >= deadline) {
        const names = queries.map((q) => `"${q.slice(0, 100)}"`).join(" or ");
        throw expired(op.gone ? `${names} did not go` : `${names} did not appear${op.enabled ? " enabled" : ""}`, within);
      }
      await sleep(Math.min(POLL_MS, deadline - Date.now()));
    }
    const q = queries[matched]!;
    out.matched = q;
    if (op.gone) out.gone = true;
    else {
      const node = isRef(q) ? tree?.get(q) : await nodeOf(locs[matched]!.filter({ visible: true }).first());
      if (node) {
        const element: Partial<SnapElement> = node.ref ? toElement(st, node, node.ref) : { role: node.role, name: node.name };
        issue(st, isRef(q) ? gen : st.gen, [node.ref]);
        out.element = element;
      }
    }
  }

  if (op.until !== undefined) {
    try {
      await page.waitForFunction(op.until, undefined, { timeout: left(), polling: POLL_MS });
    } catch (err) {
      if ((err as Error).name === "TimeoutError") throw expired(`\`until\` did not become true`, within);
      throw failure(err, "evaluating `until`", st);
    }
  }

  if (op.quiet_ms !== undefined && !(await waitQuiet(page, op.quiet_ms, deadline - Date.now()))) {
    throw expired(`the page was not quiet for ${op.quiet_ms} ms`, within);
  }
  out.waited_ms = Date.now() - started;
  return out;
}
