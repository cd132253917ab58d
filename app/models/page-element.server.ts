import type { Locator } from "playwright-core";
import { badRequest } from "~/utils/api-error.server";
import type { RunningBox } from "./box.server";
import type { TabPage } from "./page-browser.server";
import { type ElementOp, act } from "./page-element-ops.server";
import { type AriaNode, type SnapElement, ariaTree, ariaTreeAt, currentTree, flatten, issue, keep, nextRev, refLocator, refState, signature, toElement } from "./page-element-snap.server";
import { ACT_MS, type How, candidates, failure, isRef, locate, prepare, rootsOf } from "./page-element-target.server";
import { waitFor, waitQuiet } from "./page-element-wait.server";
import { warm } from "./page-element-watch.server";

// Pages by element (seed 000 "Pages" and "Element operations", 004): snapshots of a tab's
// controls with refs, finding elements, and acting on them, all through playwright-core attached
// to the screen's Chromium (page-browser.server.ts). Shared by the /v1 routes and the batch steps
// (`on_page`, `look`, `snapshot`).

export type { ElementOp };

export interface ElementOpOptions {
  /** Wait this long after the operation before reading what changed. */
  settle_ms?: number;
  /** The workspace whose secrets a `secret_ref` names (the box's owner; null: the server's). */
  owner: string | null;
  /** The box the tab is in: `upload` reads its files from there. */
  box?: RunningBox;
}

export interface SnapshotQuery {
  scope?: string;
  limit?: number;
  delta?: boolean | string | number;
  quiet_ms?: number;
}

export interface FindQuery {
  query: string;
  limit?: number;
  scroll?: boolean;
  exact?: boolean;
  role?: string;
}

export const DEFAULT_SNAPSHOT_LIMIT = 2000;
export const DEFAULT_FIND_LIMIT = 20;

/** How long a call waits for the server's view of a tab to catch up with Chromium's. */
const CATCH_UP_MS = 2000;

/**
 * Waits until the server's connection has heard of the navigation that the tab list (Chromium's
 * own view, read for this call) already shows: its events can lag behind another client's (the
 * agent's `open_url`, a person), and a snapshot taken meanwhile would read the page before.
 */
async function caughtUp(tp: TabPage): Promise<void> {
  const want = tp.tab.url;
  // A listing kept from an earlier step tells nothing new (the page may have moved on since).
  if (!tp.reused && want && tp.page.url() !== want) {
    await tp.page.waitForURL((u) => u.href === want, { timeout: CATCH_UP_MS, waitUntil: "commit" }).catch(() => undefined);
  }
  // The page's watcher (page-element-watch.server.ts), ready by the time a snapshot is wanted.
  warm(tp.page, refState(tp.page).gen);
}

/**
 * Runs `f`, turning a Playwright error that escaped the operation's own handling (the tab closed,
 * the page went away mid-call) into the seed's error, secrets scrubbed, rather than a 500.
 */
async function guarded<T>(tp: TabPage, doing: string, f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (err) {
    const e = err as Error;
    if (e?.name === "TimeoutError" || /^[a-zA-Z]+\.[a-zA-Z]+: /.test(String(e?.message))) throw failure(err, doing, refState(tp.page));
    throw err;
  }
}

export async function elementOp(tp: TabPage, op: ElementOp, opts: ElementOpOptions): Promise<Record<string, unknown>> {
  return guarded(tp, op.op, async () => {
    await caughtUp(tp);
    const st = refState(tp.page);
    if (op.op !== "wait_for") return act(tp, st, op, opts);
    const url = tp.page.url();
    const navs = st.mainNavs;
    const out = await waitFor(tp.page, st, op);
    return { op: op.op, ...out, url: tp.page.url(), navigated: st.mainNavs !== navs || tp.page.url() !== url };
  });
}

/** `delta`: true (since the last snapshot), a rev, or nothing. */
function sinceOf(d: SnapshotQuery["delta"]): number | "last" | undefined {
  if (d === undefined || d === false || d === "false") return undefined;
  if (d === true || d === "true") return "last";
  if (typeof d === "number") return d;
  if (/^\d{1,15}$/.test(d)) return Number(d);
  throw badRequest("`delta` is true, false, or the rev of an earlier snapshot of this tab");
}

export function snapshot(tp: TabPage, q: SnapshotQuery): Promise<Record<string, unknown>> {
  return guarded(tp, "taking the snapshot", () => takeSnapshot(tp, q));
}

async function takeSnapshot(tp: TabPage, q: SnapshotQuery): Promise<Record<string, unknown>> {
  const { page } = tp;
  const st = refState(page);
  const since = sinceOf(q.delta);
  await caughtUp(tp);
  let quiet: boolean | undefined;
  if (q.quiet_ms !== undefined) quiet = await waitQuiet(page, q.quiet_ms, Math.min(30_000, q.quiet_ms + 10_000));
  let of: Locator | undefined;
  if (q.scope !== undefined) of = await scopeOf(tp, q.scope);
  let snap: { tree: AriaNode[]; gen: number };
  let title: string;
  try {
    // The whole page's: the kept snapshot when nothing changed since it was taken.
    [snap, title] = await Promise.all([of ? ariaTreeAt(st, of, true) : currentTree(page, st), page.title()]);
  } catch (err) {
    throw failure(err, "taking the snapshot", st);
  }
  const { tree, gen } = snap;
  const all = flatten(st, tree);
  const rev = nextRev(tp.tab.id);
  const sigs = new Map(all.map((e) => [e.ref, signature(e)]));
  // A scoped snapshot is a part of the page: it is no base for a later delta of the whole.
  const base = keep(st, { rev, gen, sigs: q.scope === undefined ? sigs : new Map() }, since);
  let elements: SnapElement[] = all;
  let delta: Record<string, unknown> | undefined;
  if (since !== undefined) {
    if (!base) delta = { since: null };
    else if (base.gen !== gen) delta = { since: base.rev, navigated: true };
    else {
      elements = all.filter((e) => base.sigs.get(e.ref) !== signature(e));
      delta = { since: base.rev, removed: [...base.sigs.keys()].filter((r) => !sigs.has(r)) };
    }
  }
  const limit = q.limit ?? DEFAULT_SNAPSHOT_LIMIT;
  const cut = elements.length > limit;
  if (cut) elements = elements.slice(0, limit);
  issue(st, gen, elements.map((e) => e.ref));
  return {
    url: page.url(),
    title,
    tab: tp.tab.id,
    screen: tp.screen,
    rev,
    ...(quiet !== undefined && { quiet }),
    ...(delta && { delta }),
    elements,
    ...(cut && { cut: true }),
  };
}

/** The element a `scope` names (a ref handed out in this document, a selector or text). */
async function scopeOf(tp: TabPage, scope: string): Promise<Locator> {
  if (!isRef(scope)) return (await locate(tp.page, scope, false)).loc;
  const st = refState(tp.page);
  await prepare(tp.page, st, [scope]);
  return refLocator(tp.page, st, scope);
}

interface Found {
  how: How;
  loc: Locator;
}

/** `find`: the elements a query matches, in priority order, with refs, boxes and their state. */
export function findElements(tp: TabPage, q: FindQuery): Promise<Record<string, unknown>> {
  return guarded(tp, `finding "${q.query.slice(0, 200)}"`, () => find(tp, q));
}

async function find(tp: TabPage, q: FindQuery): Promise<Record<string, unknown>> {
  const { page } = tp;
  await caughtUp(tp);
  const st = refState(page);
  let gen = st.gen;
  const limit = q.limit ?? DEFAULT_FIND_LIMIT;
  let found: Found[] = [];
  let total = 0;
  try {
    if (isRef(q.query)) {
      found = [{ how: "ref", loc: await scopeOf(tp, q.query) }];
      gen = st.gen;
      total = 1;
    } else {
      await page.waitForLoadState("domcontentloaded", { timeout: ACT_MS }).catch(() => undefined);
      const cands = rootsOf(page).flatMap((root) => candidates(root, q.query, q.exact ?? false, q.role));
      const counts = await Promise.all(cands.map((c) => c.loc.count()));
      gen = st.gen; // as of the documents these counts saw (see `issue`)
      cands.forEach((c, i) => {
        total += counts[i]!;
        for (let n = 0; n < counts[i]! && found.length < limit * 2; n++) found.push({ how: c.how, loc: c.loc.nth(n) });
      });
    }
    if (q.scroll && found[0]) await found[0].loc.scrollIntoViewIfNeeded({ timeout: ACT_MS });
  } catch (err) {
    if (/selector|unexpected token|parsing/i.test(String((err as Error).message))) {
      throw badRequest(`"${q.query.slice(0, 200)}" is not a selector Playwright can read`);
    }
    throw failure(err, `finding "${q.query.slice(0, 200)}"`, st);
  }
  const described = await Promise.all(found.map((f) => describe(f)));
  // One element found by two strategies (its label and its text) is listed once, at the first.
  const seen = new Set<string>();
  const unique = described.filter((d): d is Record<string, unknown> => {
    if (!d || (q.role && d.role !== q.role)) return false;
    if (typeof d.ref !== "string") return true;
    if (seen.has(d.ref)) return false;
    seen.add(d.ref);
    return true;
  });
  const elements = unique.slice(0, limit);
  issue(st, gen, elements.map((e) => e.ref as string | undefined));
  return {
    url: page.url(),
    tab: tp.tab.id,
    screen: tp.screen,
    query: q.query,
    elements,
    ...((unique.length > limit || total > found.length) && { cut: true }),
  };

  async function describe(f: Found): Promise<Record<string, unknown> | undefined> {
    try {
      const [node, visible, enabled, inert] = await Promise.all([
        ariaTree(f.loc, true, 0).then((t) => t[0]),
        f.loc.isVisible(),
        f.loc.isEnabled({ timeout: 1000 }).catch(() => false),
        f.loc.evaluate(inInert, undefined, { timeout: 1000 }).catch(() => false),
      ]);
      const base = node?.ref ? toElement(st, node, node.ref) : await textOf(f.loc, node);
      // An inert control takes no input, as Playwright's actions say ("element is inert").
      return { ...base, visible, enabled: enabled && !inert, matched: f.how };
    } catch {
      return undefined; // it went away while we looked
    }
  }
}

/** Whether the element is in an `inert` subtree (through shadow hosts, as Playwright's check). */
function inInert(el: Element): boolean {
  for (let e: Element | null = el; e; e = e.parentElement ?? ((e.parentNode as ShadowRoot | null)?.host ?? null)) {
    if (e.hasAttribute("inert")) return true;
  }
  return false;
}

/** An element the accessibility tree does not list (hidden, or only text): what it says. */
async function textOf(loc: Locator, node?: AriaNode): Promise<Record<string, unknown>> {
  const text = await loc.evaluate((el) => {
    // "…" marks a cut: secret masking takes a value's start out before it (secret-mask.server.ts).
    const all = ((el as HTMLElement).innerText || el.textContent || "").trim();
    return all.length > 300 ? `${all.slice(0, 300)}…` : all;
  }, undefined, { timeout: 1000 }).catch(() => "");
  return { ref: null, role: node?.role === "text" ? null : (node?.role ?? null), name: text, ...(node?.box && { box: node.box }) };
}


