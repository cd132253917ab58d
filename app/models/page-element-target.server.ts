import type { Frame, Locator, Page } from "playwright-core";
import { ApiError, badRequest, notFound } from "~/utils/api-error.server";
import { type AriaNode, type CurrentTree, type RefState, REF_RE, ariaTree, byRef, currentTree, refLocator } from "./page-element-snap.server";
import { cutText } from "~/utils/cut-text";

// From a `query` to a Playwright locator, and from a Playwright failure to the seed's error.
// A query is a ref from a snapshot (`e12`, `f1e3` in an iframe), a Playwright selector with its
// engine (`css=`, `xpath=`, `text=`, `role=`, `internal:…`), or plain text, which is tried as a
// label, a placeholder, the name of a control, text, a title and alt text, in that order; the
// first of those with a visible match wins. Waiting and actionability are Playwright's own
// (visible, stable, enabled, editable, not inert, receives events), bounded by ACT_MS.

/** How long an operation waits for Playwright's actionability checks before it is refused. */
export const ACT_MS = 3000;

export type How = "ref" | "selector" | "label" | "placeholder" | "role" | "text" | "title" | "alt";

export interface Target {
  loc: Locator;
  how: How;
  /** The element's node in a snapshot (its ref, role and name), when it has one. */
  node?: AriaNode;
}

const ENGINE_RE = /^(css|xpath|text|role|id|data-testid|data-test-id|data-test|nth|visible|aria-ref|internal:[a-z-]+)=/;
export const isRef = (q: string) => REF_RE.test(q);
export const isSelector = (q: string) => ENGINE_RE.test(q) || q.startsWith("//");

/** Controls whose accessible name a plain-text query may be. */
const NAMED_ROLES = [
  "button",
  "link",
  "checkbox",
  "radio",
  "switch",
  "option",
  "tab",
  "menuitem",
  "menuitemcheckbox",
  "menuitemradio",
  "treeitem",
  "combobox",
  "textbox",
  "searchbox",
  "spinbutton",
  "slider",
  "listbox",
] as const;

type AriaRole = Parameters<Page["getByRole"]>[0];

export interface Candidate {
  how: How;
  loc: Locator;
}

/** The locators a non-ref query may mean, in priority order (`role` narrows text to that role). */
export function candidates(page: Page | Frame, q: string, exact: boolean, role?: string): Candidate[] {
  if (isSelector(q)) return [{ how: "selector", loc: page.locator(q) }];
  if (role) return [{ how: "role", loc: page.getByRole(role as AriaRole, { name: q, exact }) }];
  const named = NAMED_ROLES.map((r) => page.getByRole(r, { name: q, exact })).reduce((a, b) => a.or(b));
  return [
    { how: "label", loc: page.getByLabel(q, { exact }) },
    { how: "placeholder", loc: page.getByPlaceholder(q, { exact }) },
    { how: "role", loc: named },
    { how: "text", loc: page.getByText(q, { exact }) },
    { how: "title", loc: page.getByTitle(q, { exact }) },
    { how: "alt", loc: page.getByAltText(q, { exact }) },
  ];
}

export function nothingMatches(q: string): ApiError {
  return notFound(
    `nothing on the page matches "${q.slice(0, 200)}" as a label, placeholder, control name, text, title or alt text; ` +
      `a CSS selector is written css=…, an XPath xpath=…, and a ref (e12) comes from a snapshot`,
  );
}

export function unknownRef(ref: string): ApiError {
  return notFound(`ref ${ref} was not issued by a snapshot of this page (or the page has navigated since); take a new snapshot`);
}

export function staleRef(ref: string): ApiError {
  return notFound(`ref ${ref} is stale: its element is gone, hidden or changed since the snapshot; take a new snapshot`);
}

/** Counts matches, turning a selector Playwright cannot parse into a 400. */
async function countOf(loc: Locator, q: string): Promise<number> {
  try {
    return await loc.count();
  } catch (err) {
    const msg = stripAnsi(String((err as Error).message)).split("\n")[0]!.replace(/^[\w.]+: /, "");
    if (/selector|unexpected token|parsing|not a valid/i.test(msg)) throw badRequest(`"${q.slice(0, 200)}" is not a selector Playwright can read: ${cutText(msg, 300)}`);
    throw failure(err, `finding "${q.slice(0, 200)}"`);
  }
}

/**
 * A non-ref query's element: the first visible match in priority order, else the first match
 * (an operation on it then fails Playwright's "visible" check), else 404 at once.
 */
export async function locate(page: Page, q: string, exact: boolean): Promise<Target> {
  await page.waitForLoadState("domcontentloaded", { timeout: ACT_MS }).catch(() => undefined);
  // The page first; its frames only when nothing in the page itself matches.
  for (const root of rootsOf(page)) {
    const cands = candidates(root, q, exact);
    // Counted in two waves: most queries are a label, a placeholder or a control's name, and the
    // later strategies cannot win once one of those has a visible match.
    const visible: number[] = [];
    let i = -1;
    for (const wave of [cands.slice(0, 3), cands.slice(3)]) {
      if (i >= 0 || !wave.length) break;
      visible.push(...(await Promise.all(wave.map((c) => countOf(c.loc.filter({ visible: true }), q)))));
      i = visible.findIndex((n) => n > 0);
    }
    if (i >= 0) {
      // Several near matches ("Sign in", "Sign in with Google"): an exact one comes first.
      if (visible[i]! > 1 && !exact) {
        const whole = candidates(root, q, true)[i]!.loc.filter({ visible: true });
        if ((await countOf(whole, q)) > 0) return { how: cands[i]!.how, loc: whole.first() };
      }
      return { how: cands[i]!.how, loc: cands[i]!.loc.filter({ visible: true }).first() };
    }
    const any = await Promise.all(cands.map((c) => countOf(c.loc, q)));
    i = any.findIndex((n) => n > 0);
    if (i >= 0) return { how: cands[i]!.how, loc: cands[i]!.loc.first() };
    if (isSelector(q)) break; // a selector names its frames itself (internal:control=enter-frame)
  }
  throw nothingMatches(q);
}

/** The page, then every frame in it, in document order. */
export function rootsOf(page: Page): (Page | Frame)[] {
  return [page, ...page.frames().filter((f) => f !== page.mainFrame() && !f.isDetached())];
}

/** How long describing an element may take (it may have gone: Playwright would wait for it). */
const DESCRIBE_MS = 2000;

/** The snapshot node of one element (ref, role, name), if it is in the accessibility tree. */
export async function nodeOf(loc: Locator): Promise<AriaNode | undefined> {
  try {
    const [n] = await ariaTree(loc, false, 0, DESCRIBE_MS);
    return n?.role && n.role !== "text" ? n : undefined;
  } catch {
    return undefined;
  }
}

export interface Prepared {
  targets: Target[];
  before: AriaNode[];
  gen: number;
  /**
   * Settles once every target found by text has its `node`: they are described alongside the
   * operation (their snapshots are sent before it, so they see the element as it was), not
   * before it. Targets named by ref have theirs at once.
   */
  described: Promise<unknown>;
}

/**
 * The elements the queries name, with the page's current snapshot (currentTree: the kept one when
 * nothing changed since, else a fresh one). A ref must have been handed out in this document
 * (else 404 at once) and be in that snapshot: the same element, with the same role and name (else
 * it is stale: 404). With a ref, the snapshot comes last and must be one Playwright still resolves
 * `aria-ref=` against (the whole page's, not an element's).
 */
export async function prepare(page: Page, st: RefState, queries: string[], exact = false): Promise<Prepared> {
  const gen = st.gen;
  for (const q of queries) if (isRef(q) && !st.known.has(q)) throw unknownRef(q);
  const locateAll = async () => {
    const found: (Target | undefined)[] = [];
    for (const q of queries) found.push(isRef(q) ? undefined : await locate(page, q, exact));
    return found;
  };
  let snap: CurrentTree;
  let found: (Target | undefined)[];
  let described: Promise<unknown>;
  if (!queries.some(isRef)) {
    // No ref to resolve afterwards, so the page's snapshot, the finding and the elements' own
    // snapshots may overlap.
    [snap, found] = await Promise.all([currentTree(page, st), locateAll()]);
    described = Promise.all(found.map(async (t) => t && (t.node = await nodeOf(t.loc))));
  } else {
    // An element's own snapshot narrows what `aria-ref=` resolves against: the page's comes last.
    found = await locateAll();
    for (const t of found) if (t) t.node = await nodeOf(t.loc);
    snap = await currentTree(page, st, true);
    described = Promise.resolve();
  }
  const nodes = byRef(snap.tree);
  const targets = queries.map((q, i) => {
    if (!isRef(q)) return found[i]!;
    const node = nodes.get(q);
    // A navigation heard during the snapshot: the ref was handed out for the document before.
    if (!node || snap.gen !== gen) {
      st.known.delete(q);
      throw staleRef(q);
    }
    return { loc: refLocator(page, st, q), how: "ref" as const, node };
  });
  return { targets, before: snap.tree, gen: snap.gen, described };
}

/** How an answer names the element it acted on: `e5 (button "Save")` or `"Save"`. */
export function named(q: string, t?: Target): string {
  const n = t?.node;
  const what = n ? `${n.role}${n.name ? ` "${cutText(n.name, 80)}"` : ""}` : "";
  if (isRef(q)) return what ? `${q} (${what})` : q;
  return what ? `"${q.slice(0, 200)}" (${what})` : `"${q.slice(0, 200)}"`;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: Playwright colours its call log
const ANSI_RE = /\u001b\[[0-9;]*m/g;
const stripAnsi = (s: string) => s.replace(ANSI_RE, "");

/** Playwright's call log names the check that kept failing; the last one is the reason. */
function actionability(log: string[]): { check: string; detail: string } | undefined {
  for (const raw of [...log].reverse()) {
    const l = raw.trim().replace(/^- /, "").replace(/^\d+ × /, "");
    const not = /^element is not (visible|enabled|editable|stable)/.exec(l);
    if (not) return { check: not[1]!, detail: l };
    // Inside an `inert` subtree: the page takes no clicks, focus or typing there.
    if (/^element is inert/.test(l)) return { check: "not inert", detail: l };
    const covered = /^(.*) intercepts pointer events$/.exec(l);
    if (covered) return { check: "receives events", detail: `${cutText(covered[1]!, 300)} intercepts pointer events` };
    if (/element is outside of the viewport/.test(l)) return { check: "in viewport", detail: l };
  }
  return undefined;
}

/** A message with every secret typed into the tab, and any value Playwright logs for `fill`, taken out. */
export function scrub(st: RefState | undefined, s: string): string {
  let out = s.replace(/fill\("(?:[^"\\]|\\.)*"\)/g, "fill(…)");
  for (const secret of st?.secrets ?? []) if (secret) out = out.split(secret).join("••••••");
  return out;
}

/** The seed's error for a Playwright failure while `doing` something (never Playwright's raw log). */
export function failure(err: unknown, doing: string, st?: RefState, waitedMs = ACT_MS): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as Error;
  const [head = "", ...log] = scrub(st, stripAnsi(String(e?.message ?? err))).split("\n");
  if (/has been closed|Target closed|Session closed/i.test(head)) {
    return new ApiError("screen_unavailable", `the tab closed while ${doing}`, { retryable: true });
  }
  if (/Execution context was destroyed|frame (was|got) detached|navigat/i.test(head)) {
    return new ApiError("failed", `the page navigated while ${doing}; take a new snapshot`, { retryable: true });
  }
  if (e?.name === "TimeoutError") {
    const why = actionability(log);
    if (why) return new ApiError("failed", `${doing}: Playwright's "${why.check}" check did not pass within ${waitedMs} ms: ${why.detail}`);
    if (!log.some((l) => /locator resolved to/.test(l))) return notFound(`${doing}: the element is no longer on the page`);
    return new ApiError("failed", `${doing} did not finish within ${waitedMs} ms`);
  }
  const msg = head.replace(/^[\w.]+: /, "").replace(/^Error: /, "");
  return new ApiError("failed", `${doing} failed: ${cutText(msg, 500)}`);
}
