import path from "node:path";
import type { Locator, Page } from "playwright-core";
import type { z } from "zod";
import { agentCall } from "~/protocol/agent";
import type { ElementOpSchema } from "~/protocol/page-actions";
import { ApiError, badRequest, notFound, unsupported } from "~/utils/api-error.server";
import type { RunningBox } from "./box.server";
import { type TabPage, targetIdOf } from "./page-browser.server";
import { type AriaNode, type RefState, type SnapElement, byRef, changesBetween, currentTree, flatten, issue, toElement } from "./page-element-snap.server";
import { ACT_MS, type How, type Target, failure, named, prepare } from "./page-element-target.server";
import { callAgent } from "./screen.server";
import { secretToType } from "./secret-mask.server";

// The element operations that act (seed 000, "Element operations"), each through Playwright's
// own actionability. An answer says what was acted on, the URL after, whether the page
// navigated, and which controls changed state (a snapshot before and one after, compared by ref;
// either is the kept one when the page's watcher says nothing changed since it was taken, so an
// operation that changes nothing on the page takes no snapshot after it).

export type ElementOp = z.infer<typeof ElementOpSchema>;
type Op<K extends ElementOp["op"]> = Extract<ElementOp, { op: K }>;

export interface ActOptions {
  settle_ms?: number;
  owner: string | null;
  box?: RunningBox;
}

type Extra = Record<string, unknown>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** How long after a navigation the answer waits for the new document before reading it. */
const NAV_READY_MS = 5000;
/** Pointer moves of a drag per `motion` (Playwright moves in a straight line). */
const DRAG_STEPS = { instant: 1, smooth: 10, human: 25 } as const;
const DEFAULT_HIGHLIGHT_MS = 1500;

interface Before {
  gen: number;
  navs: number;
  url: string;
  /** The snapshot to compare with; none for operations that change nothing. */
  tree?: AriaNode[];
  target?: Target;
}

/** Where things stood before an operation; `gen` as read after the snapshot it was checked against. */
function mark(page: Page, st: RefState, gen: number, tree?: AriaNode[], target?: Target): Before {
  return { gen, navs: st.mainNavs, url: page.url(), tree, target };
}

/** The answer after an operation: settle, then read what changed (unless the page navigated). */
async function answer(tp: TabPage, st: RefState, op: ElementOp, b: Before, settleMs: number | undefined, extra: Extra) {
  const { page } = tp;
  if (settleMs) await sleep(settleMs);
  const navigated = st.mainNavs !== b.navs || page.url() !== b.url;
  // Not waitForLoadState: a page restored from the back-forward cache never fires its events again.
  if (navigated) {
    await page.waitForFunction(() => document.readyState !== "loading", undefined, { timeout: NAV_READY_MS, polling: 50 }).catch(() => undefined);
  }
  let after: AriaNode[] | undefined;
  let gen = st.gen;
  if (b.tree && gen === b.gen) {
    const snap = await currentTree(page, st).catch(() => undefined);
    after = snap?.tree;
    gen = snap?.gen ?? st.gen;
  }
  const fresh = gen === b.gen;
  // Boxes are the snapshot's business: an answer about an operation names controls and states.
  const changes = after && fresh ? changesBetween(flatten(st, b.tree!, false), flatten(st, after, false)) : undefined;
  const node = b.target?.node;
  let element: Partial<SnapElement> | undefined;
  if (node?.ref) element = toElement(st, (fresh && after && byRef(after).get(node.ref)) || node, node.ref, false);
  else if (node) element = { role: node.role, ...(node.name && { name: node.name }) };
  if (element && !fresh) delete element.ref;
  issue(st, b.gen, [element?.ref, ...(changes?.changed ?? []).map((e) => e.ref), ...(changes?.appeared ?? []).map((e) => e.ref)]);
  return {
    op: op.op,
    ...(element && { element }),
    ...(b.target && { matched: b.target.how satisfies How }),
    url: page.url(),
    navigated,
    changed: changes?.changed ?? [],
    ...(changes?.appeared.length && { appeared: changes.appeared }),
    ...(changes?.removed.length && { removed: changes.removed }),
    // The page or a frame in it navigated: every ref handed out before is stale now.
    ...(!fresh && { refs_stale: true }),
    ...extra,
  };
}

/** Runs `act` on the element `q` names, inside Playwright's actionability, and answers. */
async function onElement(
  tp: TabPage,
  st: RefState,
  op: ElementOp,
  q: string,
  opts: ActOptions,
  act: (t: Target, doing: string) => Promise<Extra | void>,
  compare = true,
): Promise<Extra> {
  const { targets, before, gen, described } = await prepare(tp.page, st, [q]);
  const target = targets[0]!;
  const b = mark(tp.page, st, gen, compare ? before : undefined, target);
  const doing = () => `${op.op} on ${named(q, target)}`;
  let extra: Extra | void;
  try {
    extra = await act(target, doing());
  } catch (err) {
    await described;
    throw failure(err, doing(), st);
  }
  await described;
  return answer(tp, st, op, b, opts.settle_ms, extra ?? {});
}

async function click(tp: TabPage, st: RefState, op: Op<"click">, opts: ActOptions) {
  return onElement(tp, st, op, op.query, opts, async (t, doing) => {
    const o = { button: op.button, timeout: ACT_MS };
    if (!op.new_tab) {
      if (op.double) await t.loc.dblclick(o);
      else await t.loc.click(o);
      return;
    }
    // A ctrl (meta on macOS) click opens the link in a new tab behind this one.
    const opened = tp.page.context().waitForEvent("page", { timeout: ACT_MS }).catch(() => undefined);
    await t.loc.click({ ...o, modifiers: ["ControlOrMeta"] });
    const page = await opened;
    if (!page) throw new ApiError("failed", `${doing} opened no tab within ${ACT_MS} ms`);
    await page.waitForLoadState("domcontentloaded", { timeout: ACT_MS }).catch(() => undefined);
    return { opened: { tab: await targetIdOf(page), url: page.url() } };
  });
}

type Point = { x: number; y: number };

async function centre(loc: Locator, hover: boolean): Promise<Point> {
  if (hover) await loc.hover({ timeout: ACT_MS });
  const b = await loc.boundingBox({ timeout: ACT_MS });
  if (!b) throw new ApiError("failed", "the element has no box on the page (it is not rendered)");
  return { x: b.x + b.width / 2, y: b.y + b.height / 2 };
}

async function drag(tp: TabPage, st: RefState, op: Op<"drag">, opts: ActOptions) {
  const { page } = tp;
  const queries = [op.from, op.to].filter((e): e is string => typeof e === "string");
  const { targets, before, gen, described } = await prepare(page, st, queries);
  await described;
  const [from, to] = [op.from, op.to].map((e) => (typeof e === "string" ? targets[queries.indexOf(e)] : undefined));
  const b = mark(page, st, gen, before, from ?? to);
  const where = (e: string | Point, t?: Target) => (typeof e === "string" ? named(e, t) : `(${e.x}, ${e.y})`);
  const doing = `drag from ${where(op.from, from)} to ${where(op.to, to)}`;
  const steps = DRAG_STEPS[op.motion ?? "instant"];
  try {
    if (from && to && (op.button ?? "left") === "left") {
      // Playwright's own drag: actionability on both ends, and HTML drag and drop.
      await from.loc.dragTo(to.loc, { timeout: ACT_MS, steps });
    } else {
      const start = from ? await centre(from.loc, true) : (op.from as Point);
      await page.mouse.move(start.x, start.y);
      await page.mouse.down({ button: op.button });
      const end = to ? await centre(to.loc, false) : (op.to as Point);
      await page.mouse.move(end.x, end.y, { steps });
      await page.mouse.up({ button: op.button });
    }
  } catch (err) {
    throw failure(err, doing, st);
  }
  return answer(tp, st, op, b, opts.settle_ms, to?.node?.ref ? { to: { ref: to.node.ref, role: to.node.role, name: to.node.name } } : {});
}

/**
 * An element focused in the page does not take Chromium's keyboard from the address bar (a fresh
 * box's about:blank tab has it there), where the `type` and `press` after `focus` or `fill` went.
 * The front tab is given it (bringToFront focuses its contents). Asking the page would not do:
 * `fill` types through DevTools, so `document.hasFocus()` is true while the address bar has it.
 */
const keysToPage = (tp: TabPage) => (tp.tab.active ? tp.page.bringToFront().catch(() => undefined) : undefined);

async function fill(tp: TabPage, st: RefState, op: Op<"fill">, opts: ActOptions) {
  let value = op.text;
  if (op.secret_ref !== undefined) {
    value = await secretToType(opts.owner, op.secret_ref, opts.box?.id);
    // From here on masked in every answer about the box, and in messages (secret-mask.server.ts).
    st.secrets.add(value);
  }
  const text = value ?? "";
  return onElement(tp, st, op, op.query, opts, async (t) => {
    await t.loc.fill(text, { timeout: ACT_MS });
    await keysToPage(tp);
    return op.secret_ref !== undefined ? { filled: { secret_ref: op.secret_ref } } : { filled: { chars: text.length } };
  });
}

interface OptionInfo {
  value: string;
  label: string;
  selected: boolean;
  disabled?: boolean;
}

/** In the page: the options of a select (or a datalist, or an ARIA listbox the element owns). */
function readOptions(el: Element): { multiple: boolean; options: OptionInfo[] } | null {
  const cut = (s: string) => ((s = s.trim()).length > 300 ? `${s.slice(0, 300)}…` : s); // "…": secret-mask.server.ts
  const sel = el instanceof HTMLSelectElement ? el : el instanceof HTMLLabelElement && el.control instanceof HTMLSelectElement ? el.control : null;
  if (sel) {
    const options = [...sel.options].slice(0, 1000).map((o) => ({ value: o.value, label: cut(o.label), selected: o.selected, ...(o.disabled && { disabled: true }) }));
    return { multiple: sel.multiple, options };
  }
  if (el instanceof HTMLInputElement && el.list) {
    const options = [...el.list.options].slice(0, 1000).map((o) => ({ value: o.value, label: cut(o.label || o.value), selected: o.value === el.value }));
    return { multiple: false, options };
  }
  const ids = `${el.getAttribute("aria-controls") ?? ""} ${el.getAttribute("aria-owns") ?? ""}`.split(/\s+/).filter(Boolean);
  const box = el.getAttribute("role") === "listbox" ? el : ids.map((id) => document.getElementById(id)).find((x) => x?.getAttribute("role") === "listbox");
  if (!box) return null;
  const options = [...box.querySelectorAll('[role="option"]')].slice(0, 1000).map((o) => ({
    value: o.getAttribute("data-value") ?? cut(o.textContent ?? ""),
    label: cut(o.textContent ?? ""),
    selected: o.getAttribute("aria-selected") === "true",
  }));
  return { multiple: box.getAttribute("aria-multiselectable") === "true", options };
}

async function optionsOf(t: Target, doing: string) {
  const out = await t.loc.evaluate(readOptions, undefined, { timeout: ACT_MS });
  if (!out) throw new ApiError("failed", `${doing}: the element is not a select, a listbox or an input with a datalist`);
  return out;
}

async function options(tp: TabPage, st: RefState, op: Op<"options">, opts: ActOptions) {
  return onElement(tp, st, op, op.query, opts, (t, doing) => optionsOf(t, doing), false);
}

async function choose(tp: TabPage, st: RefState, op: Op<"choose">, opts: ActOptions) {
  return onElement(tp, st, op, op.query, opts, async (t, doing) => {
    const { multiple, options: all } = await optionsOf(t, doing);
    const norm = (s: string) => s.trim().toLowerCase();
    const pick = (n: string) => all.find((o) => o.value === n) ?? all.find((o) => o.label === n) ?? all.find((o) => norm(o.label) === norm(n));
    const missing = op.options.filter((n) => !pick(n));
    if (missing.length) {
      const have = all.map((o) => `"${o.label}"`).slice(0, 30).join(", ");
      throw notFound(`${doing}: no option "${missing[0]!.slice(0, 100)}" (by label or value); the options are ${have || "none"}`);
    }
    const named = [...new Set(op.options.map((n) => pick(n)!.value))];
    const selected = all.filter((o) => o.selected).map((o) => o.value);
    let values: string[];
    if (op.drop) {
      if (!multiple) throw badRequest("`drop` takes options out of a multiple select; this one holds a single choice");
      values = selected.filter((v) => !named.includes(v));
    } else if (multiple) {
      values = [...new Set([...selected, ...named])];
    } else {
      if (named.length > 1) throw badRequest("this select holds a single choice: name one option");
      values = named;
    }
    const chosen = await t.loc.selectOption(
      values.map((value) => ({ value })),
      { timeout: ACT_MS },
    );
    return { selected: chosen };
  });
}

const MIME: Record<string, string> = {
  ".txt": "text/plain",
  ".html": "text/html",
  ".csv": "text/csv",
  ".json": "application/json",
  ".pdf": "application/pdf",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".svg": "image/svg+xml",
  ".zip": "application/zip",
};

async function upload(tp: TabPage, st: RefState, op: Op<"upload">, opts: ActOptions) {
  const box = opts.box;
  if (!box) throw unsupported("upload reads its files from the box, and this caller gave no box");
  // The files are in the box; the browser is driven from the server, so their bytes come here.
  const files = await Promise.all(
    op.paths.map(async (p) => {
      const r = await callAgent<{ path: string; contents_base64: string }>(box, agentCall("fileRead", {}, { path: p }), undefined, 60_000, "bulk");
      return { name: path.posix.basename(p), mimeType: MIME[path.extname(p).toLowerCase()] ?? "application/octet-stream", buffer: Buffer.from(r.contents_base64, "base64") };
    }),
  );
  return onElement(tp, st, op, op.query, opts, async (t) => {
    await t.loc.setInputFiles(files, { timeout: ACT_MS });
    return { uploaded: files.map((f) => ({ name: f.name, bytes: f.buffer.length })) };
  });
}

async function highlight(tp: TabPage, st: RefState, op: Op<"highlight">, opts: ActOptions) {
  return onElement(
    tp,
    st,
    op,
    op.query,
    opts,
    async (t) => {
      const ms = op.ms ?? DEFAULT_HIGHLIGHT_MS;
      const shown = await t.loc.highlight();
      // The answer does not wait for the highlight to go.
      setTimeout(() => void shown.dispose().catch(() => undefined), ms).unref();
      return { highlighted_ms: ms };
    },
    false,
  );
}

async function history(tp: TabPage, st: RefState, op: Op<"history">, opts: ActOptions) {
  const { page } = tp;
  const b = mark(page, st, st.gen);
  // "commit": a page restored from the back-forward cache fires no load events (the box's
  // Chromium keeps that cache); the answer then waits for the document as after any navigation.
  const o = { timeout: 15_000, waitUntil: "commit" as const };
  try {
    const res = op.go === "reload" ? await page.reload(o) : op.go === "back" ? await page.goBack(o) : await page.goForward(o);
    if (op.go !== "reload" && res === null && st.mainNavs === b.navs && page.url() === b.url) {
      throw new ApiError("failed", `there is no page to go ${op.go} to`);
    }
  } catch (err) {
    if ((err as Error).name === "TimeoutError") throw new ApiError("timeout", `going ${op.go}: the page did not load within 15000 ms`);
    throw failure(err, `going ${op.go}`, st);
  }
  return answer(tp, st, op, b, opts.settle_ms, {});
}

/** In the page: scrolls an element's box (or the nearest one that scrolls), or with `page` the page. */
function scrollIn(el: Element, a: { to?: string; dx: number; dy: number; page?: boolean }): { x: number; y: number } {
  let s: Element = a.page ? (document.scrollingElement ?? document.documentElement) : el;
  if (!a.page && !(a.to === "top" || a.to === "bottom")) {
    while (s.parentElement && s.scrollHeight <= s.clientHeight && s.scrollWidth <= s.clientWidth) s = s.parentElement;
  }
  if (a.to === "top") s.scrollTo({ top: 0, left: 0, behavior: "instant" });
  else if (a.to === "bottom") s.scrollTo({ top: s.scrollHeight, behavior: "instant" });
  else s.scrollBy({ left: a.dx, top: a.dy, behavior: "instant" });
  return { x: Math.round(s.scrollLeft), y: Math.round(s.scrollTop) };
}

async function scroll(tp: TabPage, st: RefState, op: Op<"scroll">, opts: ActOptions) {
  const moves = op.to === "top" || op.to === "bottom" || !!op.dx || !!op.dy;
  const a = { to: op.to, dx: op.dx ?? 0, dy: op.dy ?? 0 };
  if (op.query !== undefined) {
    return onElement(tp, st, op, op.query, opts, async (t) => {
      if (!moves) {
        await t.loc.scrollIntoViewIfNeeded({ timeout: ACT_MS });
        return { scroll: await tp.page.evaluate(() => ({ x: Math.round(scrollX), y: Math.round(scrollY) })) };
      }
      return { scroll: await t.loc.evaluate(scrollIn, a, { timeout: ACT_MS }) };
    });
  }
  if (!moves) throw badRequest("scroll needs a `query` to bring into view, `to` (top, bottom), or `dx`/`dy`");
  const { page } = tp;
  const snap = await currentTree(page, st);
  const b = mark(page, st, snap.gen, snap.tree);
  let at: { x: number; y: number };
  try {
    at = await page.locator(":root").evaluate(scrollIn, { ...a, page: true }, { timeout: ACT_MS });
  } catch (err) {
    throw failure(err, "scrolling the page", st);
  }
  return answer(tp, st, op, b, opts.settle_ms, { scroll: at });
}

type Acting = Exclude<ElementOp, { op: "wait_for" }>;
type Handler<K extends Acting["op"]> = (tp: TabPage, st: RefState, op: Op<K>, opts: ActOptions) => Promise<Extra>;

/** An operation that is one Playwright call on its element. */
const simple =
  <K extends "check" | "hover">(verb: (t: Target, op: Op<K>) => Promise<void>): Handler<K> =>
  (tp, st, op, opts) =>
    onElement(tp, st, op, (op as { query: string }).query, opts, (t) => verb(t, op));

const HANDLERS: { [K in Acting["op"]]: Handler<K> } = {
  click,
  drag,
  fill,
  focus: (tp, st, op, opts) =>
    onElement(tp, st, op, op.query, opts, async (t) => {
      await t.loc.focus({ timeout: ACT_MS });
      await keysToPage(tp);
    }),
  check: simple((t, op) => t.loc.setChecked(op.on ?? true, { timeout: ACT_MS })),
  options,
  choose,
  upload,
  hover: simple((t) => t.loc.hover({ timeout: ACT_MS })),
  highlight,
  history,
  scroll,
};

/** Every operation that acts on the page; `wait_for` is in page-element-wait.server.ts. */
export function act(tp: TabPage, st: RefState, op: Acting, opts: ActOptions): Promise<Extra> {
  return (HANDLERS[op.op] as Handler<typeof op.op>)(tp, st, op, opts);
}
