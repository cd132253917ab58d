import type { Locator, Page } from "playwright-core";
import { type Box, treeToViewport } from "./page-element-frames.server";
import { hasPrefixed, mainPrefixIn, renameRefs } from "./page-element-prefix.server";
import { type Taken, peek, take } from "./page-element-watch.server";
import { type Masker, maskText, maskerOf } from "./secret-mask.server";

// Element refs and snapshots, on top of Playwright's AI-mode aria snapshot. Playwright issues the
// refs (`e12`, or `f1e3` in an iframe), keeps them for an element whose role and name stay the
// same, and resolves them with `aria-ref=` against the latest snapshot of the element's frame. It
// numbers them afresh in every new document, so after a navigation an old ref may name some other
// element of the new page: the server therefore keeps, per tab, the refs it has handed out since
// the page (or any frame in it) last navigated, and a ref outside that set is unknown (404), never
// resolved (page-element-target.server.ts).
//
// Playwright prefixes a ref with its frame's number, and gives the main frame a new number at each
// navigation to a new document but the first from about:blank (so a page opened in the front tab,
// or reloaded, had `f1e2`, `f2e2`…). The API shows the main frame's refs without it (`e2`): the
// prefix is read off each whole-page snapshot (the frame of the nodes outside any iframe), taken
// out of every ref of that frame, and put back to resolve one (`refLocator`).

export type { Box };

/** The states and properties Playwright gives a node, and the API passes on as they are. */
interface NodeState {
  checked?: boolean | "mixed";
  disabled?: boolean;
  expanded?: boolean;
  selected?: boolean;
  pressed?: boolean | "mixed";
  level?: number;
  url?: string;
  placeholder?: string;
}

/** A node of `ariaSnapshotJSON({ mode: "ai" })`: a role, or a bare text fragment. */
export interface AriaNode extends NodeState {
  role: string;
  name?: string;
  ref?: string;
  text?: string;
  children?: (AriaNode | string)[];
  box?: Box;
  /** Inside an iframe: the part of the viewport its frames show (page-element-frames.server.ts). */
  clip?: Box;
  cursor?: string;
}

/** A control as the API shows it. */
export interface SnapElement extends NodeState {
  ref: string;
  role: string;
  name?: string;
  value?: string;
  box?: Box;
}

export const REF_RE = /^(f\d+)?e\d+$/;

/** Roles a person acts on; with headings (to find one's way) they make up a snapshot. */
export const CONTROL_ROLES: ReadonlySet<string> = new Set([
  "button",
  "link",
  "textbox",
  "searchbox",
  "checkbox",
  "radio",
  "switch",
  "combobox",
  "listbox",
  "option",
  "menuitem",
  "menuitemcheckbox",
  "menuitemradio",
  "tab",
  "treeitem",
  "slider",
  "spinbutton",
]);
const CHECKABLE_ROLES: ReadonlySet<string> = new Set(["checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio"]);
/** Roles whose text is their value (what was typed or chosen), not their name. */
const VALUE_ROLES: ReadonlySet<string> = new Set(["textbox", "searchbox", "combobox", "spinbutton", "slider"]);
const MAX_NAME = 300;
const MAX_VALUE = 2000;
/** Refs remembered per tab; the oldest go first past this. */
const MAX_KNOWN = 50_000;
/** Snapshots per tab kept for `delta`. */
const HISTORY = 8;

interface Kept {
  rev: number;
  gen: number;
  sigs: Map<string, string>;
}

/** The latest full snapshot of a page, and the epoch of the page's watcher it is current as of. */
interface KeptTree {
  nodes: AriaNode[];
  gen: number;
  epoch: number;
  /** `RefState.partial` when it was taken: Playwright still resolves its refs while that holds. */
  seq: number;
}

export interface RefState {
  /** Navigations of the page or any frame in it, seen so far: a new one makes every ref stale. */
  gen: number;
  /** Navigations of the page itself (the `navigated` of an answer). */
  mainNavs: number;
  /** Refs handed out (snapshot, find, element answers) since the last navigation. */
  known: Set<string>;
  /** Values typed into this tab from secrets: masked wherever an answer would show them. */
  secrets: Set<string>;
  history: Kept[];
  /** The page's latest full snapshot (page-element-watch.server.ts says whether it is still current). */
  tree?: KeptTree;
  /**
   * Counts snapshots of a single element, before and after each: Playwright resolves `aria-ref=`
   * against the latest snapshot of the frame, and one of an element narrows it to that subtree.
   */
  partial: number;
  /**
   * Playwright's prefix of the main frame's refs (`f2`, or "") as the latest whole-page snapshot
   * showed it, and the count of the page's navigations (`mainNavs`) then: good until the next.
   */
  main?: { navs: number; prefix: string };
}

const states = new WeakMap<Page, RefState>();

export function refState(page: Page): RefState {
  let st = states.get(page);
  if (!st) {
    const s: RefState = { gen: 0, mainNavs: 0, known: new Set(), secrets: new Set(), history: [], partial: 0 };
    // Same-document navigations count too (Playwright's event does not tell them apart): a ref
    // made stale for nothing costs a snapshot; one kept wrongly could act on another element.
    page.on("framenavigated", (frame) => {
      s.gen++;
      s.known.clear();
      s.tree = undefined;
      if (frame === page.mainFrame()) s.mainNavs++;
    });
    states.set(page, (st = s));
  }
  return st;
}

/**
 * Records refs as handed out, if no navigation came after `gen`. A `gen` is read right after a
 * DevTools round trip (a snapshot): the server's connection may hear of a navigation later than
 * the caller's page did, but never later than the answer to a call sent after it.
 */
export function issue(st: RefState, gen: number, refs: Iterable<string | undefined>) {
  if (st.gen !== gen) return;
  for (const r of refs) if (r) st.known.add(r);
  if (st.known.size > MAX_KNOWN) {
    const drop = st.known.size - MAX_KNOWN;
    let i = 0;
    for (const r of st.known) {
      if (i++ >= drop) break;
      st.known.delete(r);
    }
  }
}

/** The tab's snapshot revisions, by target id: they count on across reconnections. */
const revs = new Map<string, number>();

export function nextRev(tabId: string): number {
  const rev = (revs.get(tabId) ?? 0) + 1;
  revs.delete(tabId);
  revs.set(tabId, rev);
  if (revs.size > 10_000) revs.delete(revs.keys().next().value!);
  return rev;
}

/** Keeps a snapshot's signatures for a later `delta`; returns the one asked for, if kept. */
export function keep(st: RefState, kept: Kept, since: number | "last" | undefined): Kept | undefined {
  const base = since === undefined ? undefined : since === "last" ? st.history.at(-1) : st.history.find((h) => h.rev === since);
  st.history.push(kept);
  if (st.history.length > HISTORY) st.history.shift();
  return base;
}

/** A tree with the navigation count read as soon as it came (see `issue`). */
export async function ariaTreeAt(st: RefState, of: Page | Locator, boxes: boolean): Promise<{ tree: AriaNode[]; gen: number }> {
  return ariaTree(of, boxes).then((tree) => ({ tree, gen: st.gen }));
}

/** The aria tree of the page (every frame) or of one element's subtree, main-frame refs as `eN`. */
export async function ariaTree(of: Page | Locator, boxes: boolean, depth?: number, timeout?: number): Promise<AriaNode[]> {
  const whole = isPage(of);
  const st = refState(whole ? of : of.page());
  if (!whole) st.partial++;
  let nodes: AriaNode[];
  try {
    const json = (await of.ariaSnapshotJSON({ mode: "ai", boxes, ...(depth !== undefined && { depth }), ...(timeout !== undefined && { timeout }) })) as unknown;
    nodes = Array.isArray(json) ? (json as AriaNode[]) : json ? [json as AriaNode] : [];
  } finally {
    if (!whole) st.partial++;
  }
  if (whole) {
    const prefix = mainPrefixIn(nodes);
    if (prefix !== undefined) st.main = { navs: st.mainNavs, prefix };
  } else if (mainPrefix(st) === undefined && hasPrefixed(nodes)) {
    // An element's own tree cannot say which frame it is in: the page's says which prefix is the
    // main frame's (once per document, and only when no snapshot of the page came first).
    await ariaTree(of.page(), false, undefined, timeout).catch(() => undefined);
  }
  const prefix = mainPrefix(st);
  if (prefix) renameRefs(nodes, prefix);
  // Playwright's boxes are in each frame's own viewport: moved into the page's.
  const page = whole ? of : of.page();
  if (boxes) await treeToViewport(nodes, (ref) => refLocator(page, st, ref), whole ? undefined : of);
  return nodes;
}

const isPage = (of: Page | Locator): of is Page => typeof (of as Page).mainFrame === "function";

/** The main frame's prefix as last read, if no navigation came since. */
function mainPrefix(st: RefState): string | undefined {
  return st.main && st.main.navs === st.mainNavs ? st.main.prefix : undefined;
}

/** The element a ref from an answer names, for Playwright (its main-frame prefix put back). */
export function refLocator(page: Page, st: RefState, ref: string): Locator {
  const prefix = mainPrefix(st);
  return page.getByRef(prefix && /^e\d+$/.test(ref) ? `${prefix}${ref}` : ref);
}

export interface CurrentTree {
  tree: AriaNode[];
  gen: number;
  /** The kept snapshot, nothing having changed since: no new one was taken. */
  kept: boolean;
}

/**
 * The page's aria tree (boxes included) as it is now: the kept snapshot when the page's watcher
 * says nothing changed since it was taken (one round trip), else a new one, kept in its place.
 * `resolve`: refs from it must resolve in Playwright, so the kept one also needs no snapshot of a
 * single element to have come after it.
 */
export async function currentTree(page: Page, st: RefState, resolve = false): Promise<CurrentTree> {
  const k = st.tree;
  const since = k && k.gen === st.gen ? k.epoch : undefined;
  const usable = () => (k && st.tree === k && k.gen === st.gen && (!resolve || k.seq === st.partial) ? k : undefined);
  const early = ahead.get(page);
  ahead.delete(page);
  // A peek that found nothing changed leaves the epoch: the next take still covers all since.
  if (early && early.since === since && Date.now() - early.at < AHEAD_MS && (await early.taken).same) {
    const kept = usable();
    if (kept) return { tree: kept.nodes, gen: kept.gen, kept: true };
  }
  const t = await take(page, since);
  const kept = t.same ? usable() : undefined;
  if (kept) {
    kept.epoch = t.epoch;
    return { tree: kept.nodes, gen: kept.gen, kept: true };
  }
  const seq = st.partial;
  const { tree, gen } = await ariaTreeAt(st, page, true);
  // An epoch of -1: the watcher could not be asked, so this snapshot is never taken as current.
  st.tree = { nodes: tree, gen, epoch: t.epoch, seq };
  return { tree, gen, kept: false };
}

/** How long a take started ahead stays good for the call it was started for. */
const AHEAD_MS = 250;
const ahead = new WeakMap<Page, { since: number; at: number; taken: Promise<Taken> }>();

/**
 * Asks the page whether its kept snapshot is still current ahead of the page's next currentTree,
 * while the call that will want it still waits for the agent's tab listing
 * (page-browser.server.ts): the round trips overlap. The page is the one the same tab name
 * resolved to last; when it turns out to be another, or the call wants no snapshot, the answer
 * is not used, and a peek changes nothing in the page.
 */
export function lookAhead(page: Page): void {
  const st = states.get(page);
  const k = st?.tree;
  if (!st || !k || k.gen !== st.gen) return;
  ahead.set(page, { since: k.epoch, at: Date.now(), taken: peek(page, k.epoch) });
}

/**
 * Replaces every secret typed into the tab by dots, as every answer about the box does
 * (secret-mask.server.ts: in its forms and folded; short ones only when they are the whole text).
 */
export function masked(st: RefState, s: string): string {
  if (!st.secrets.size) return s;
  let kept = tabMaskers.get(st.secrets);
  if (kept?.size !== st.secrets.size) tabMaskers.set(st.secrets, (kept = { size: st.secrets.size, m: maskerOf([...st.secrets]) }));
  return maskText(kept.m, s);
}
/** A tab's secrets (they are only added to) as a masker, made again when one is added. */
const tabMaskers = new WeakMap<Set<string>, { size: number; m: Masker }>();

const cap = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}…` : s);

function valueOf(n: AriaNode): string | undefined {
  if (!VALUE_ROLES.has(n.role)) return undefined;
  const options = (n.children ?? []).filter((c): c is AriaNode => typeof c !== "string" && c.role === "option");
  if (options.length) {
    const chosen = options.filter((o) => o.selected).map((o) => o.name ?? "");
    return chosen.length ? chosen.join(", ") : undefined;
  }
  return typeof n.text === "string" ? n.text : undefined;
}

/** One node as the API shows it (secrets masked, long text cut; its box unless `box` is false). */
export function toElement(st: RefState, n: AriaNode, ref: string, box = true): SnapElement {
  const textName = !VALUE_ROLES.has(n.role) && typeof n.text === "string" ? n.text : undefined;
  const name = n.name || textName;
  const value = valueOf(n);
  const e: SnapElement = { ref, role: n.role };
  if (name) e.name = cap(masked(st, name), MAX_NAME);
  if (value !== undefined) e.value = cap(masked(st, value), MAX_VALUE);
  for (const k of ["checked", "disabled", "expanded", "selected", "pressed", "level"] as const) {
    if (n[k] !== undefined) (e as unknown as Record<string, unknown>)[k] = n[k];
  }
  // Playwright leaves out a false state; a box that can be ticked says so.
  if (CHECKABLE_ROLES.has(n.role)) e.checked ??= false;
  if (n.role === "option") e.selected ??= false;
  if (n.url) e.url = cap(n.url, MAX_VALUE);
  if (n.placeholder) e.placeholder = cap(masked(st, n.placeholder), MAX_NAME);
  if (n.box && box) e.box = { x: Math.round(n.box.x), y: Math.round(n.box.y), width: Math.round(n.box.width), height: Math.round(n.box.height) };
  return e;
}

/** Whether a node is listed: a control, a heading, or something the page made clickable. */
function listed(n: AriaNode): boolean {
  return CONTROL_ROLES.has(n.role) || n.role === "heading" || n.cursor === "pointer";
}

/** The listed elements of a tree, in document order (with their boxes unless `boxes` is false). */
export function flatten(st: RefState, nodes: (AriaNode | string)[], boxes = true): SnapElement[] {
  const out: SnapElement[] = [];
  const walk = (n: AriaNode | string) => {
    if (typeof n === "string") return;
    if (n.ref && listed(n)) out.push(toElement(st, n, n.ref, boxes));
    for (const c of n.children ?? []) walk(c);
  };
  nodes.forEach(walk);
  return out;
}

/** Every node with a ref, by ref (to check that a ref is on the page now). */
export function byRef(nodes: (AriaNode | string)[]): Map<string, AriaNode> {
  const out = new Map<string, AriaNode>();
  const walk = (n: AriaNode | string) => {
    if (typeof n === "string") return;
    if (n.ref) out.set(n.ref, n);
    for (const c of n.children ?? []) walk(c);
  };
  nodes.forEach(walk);
  return out;
}

/** What a delta compares: everything but the box (a layout shift is not a change of the control). */
export function signature(e: SnapElement): string {
  const { box: _box, ...rest } = e;
  return JSON.stringify(rest);
}

/** The state an element operation reports as changed. */
const STATE_KEYS = ["value", "checked", "selected", "disabled", "expanded", "pressed"] as const;

export interface Changes {
  changed: (SnapElement & { was: Partial<SnapElement> })[];
  appeared: SnapElement[];
  removed: string[];
}

/** Controls whose state changed between two snapshots of one document, and those that came and went. */
export function changesBetween(before: SnapElement[], after: SnapElement[], max = 50): Changes {
  const old = new Map(before.map((e) => [e.ref, e]));
  const now = new Set(after.map((e) => e.ref));
  const changed: Changes["changed"] = [];
  const appeared: SnapElement[] = [];
  for (const e of after) {
    const o = old.get(e.ref);
    if (!o) {
      if (appeared.length < max) appeared.push(e);
      continue;
    }
    const was: Partial<SnapElement> = {};
    for (const k of STATE_KEYS) if (o[k] !== e[k]) (was as Record<string, unknown>)[k] = o[k] ?? null;
    if (Object.keys(was).length && changed.length < max) changed.push({ ...e, was });
  }
  const removed = before.filter((e) => !now.has(e.ref)).map((e) => e.ref).slice(0, max);
  return { changed, appeared, removed };
}
