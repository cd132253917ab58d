import type { Page } from "playwright-core";
import { inWorld } from "./page-content-world.server";

// Whether anything a snapshot shows may have changed since a given moment, asked of the page in
// one DevTools round trip instead of taking a new snapshot (a full one of a page with a thousand
// controls costs well over a hundred milliseconds). A watcher in the page's isolated world (out of
// the page's reach, page-content-world.server.ts) marks the page changed on:
// - any DOM mutation, in the document and in every open shadow root (the ones Playwright's
//   snapshot walks into), but of the title (a snapshot reads that afresh);
// - events that change what is shown or laid out without touching the DOM: input, change, reset,
//   toggle, scroll, resize, hover and focus moving (CSS :hover and :focus-within menus),
//   animations and transitions, resources and fonts loading;
// - what a script changes with neither a mutation nor an event at once (input.value = …,
//   checkbox.checked = …, scrollTo, whose scroll event comes a frame later): a fingerprint of
//   every control's state, the scroll offsets and the viewport is compared;
// - a page with frames in it (their documents are not watched): never unchanged.
// Each `take` answers whether nothing changed since the previous one (named by its epoch) and
// starts a new epoch (a `peek` answers the same and leaves the epoch); a snapshot taken after a `take` is current for as long as the next `take`
// names that epoch and finds nothing changed. Two callers taking turns move the epoch on, so
// either of them then sees "changed": a wrong "changed" costs a snapshot, a wrong "unchanged"
// would hand out a stale view, so every doubt is a change.

const WATCH = String.raw`(() => {
  const w = { dirty: true, epoch: Math.floor(Math.random() * 2 ** 30) * 8, print: "" };
  const mark = () => { w.dirty = true; };
  // The title is not in a snapshot (it is read afresh each time): setting it is no change.
  const titled = (n) => n.nodeName === "TITLE" || (n.parentNode && n.parentNode.nodeName === "TITLE");
  const counts = (records) => records.some((r) => !titled(r.target));
  const mo = new MutationObserver((records) => { if (counts(records)) mark(); });
  const spec = { subtree: true, childList: true, attributes: true, characterData: true };
  const seen = new WeakSet();
  const observe = (root) => {
    if (seen.has(root)) return false;
    seen.add(root);
    mo.observe(root, spec);
    return true;
  };
  const EVENTS = ["input", "change", "reset", "beforetoggle", "toggle", "mouseover", "mouseout", "focusin", "focusout",
    "animationstart", "animationiteration", "animationend", "animationcancel", "transitionstart", "transitionend", "transitioncancel",
    "load", "error", "fullscreenchange"];
  for (const e of EVENTS) document.addEventListener(e, mark, { capture: true, passive: true });
  // Boxes that scrolled once: their offsets go into the fingerprint (reading every element's
  // would cost more than the rest of a look together).
  const scrolled = new Set();
  document.addEventListener("scroll", (e) => {
    mark();
    if (e.target instanceof Element) scrolled.add(e.target);
  }, { capture: true, passive: true });
  addEventListener("resize", mark, { passive: true });
  if (document.fonts) document.fonts.addEventListener("loadingdone", mark);
  // One walk over every element, the document's and each open shadow root's: shadow roots
  // attached since the last look (a new one is a change: what happened in it was not watched),
  // and a fingerprint (FNV-1a) of what a script changes with no mutation and no event at once:
  // the values and checks of controls, and the scroll offsets of the page and of boxes that
  // scrolled before, and the viewport (their events come a frame later).
  const look = () => {
    let grew = false;
    let h = 0x811c9dc5;
    const add = (s) => {
      for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
      h = Math.imul(h ^ 31, 16777619);
    };
    const walk = (root) => {
      for (const el of root.querySelectorAll("*")) {
        const s = el.shadowRoot;
        if (s) {
          if (observe(s)) grew = true;
          walk(s);
        }
        const tag = el.tagName;
        if (tag === "INPUT" || tag === "TEXTAREA") add(el.value + (el.checked ? "1" : "0") + (el.indeterminate ? "1" : "0"));
        else if (tag === "SELECT") add(Array.from(el.selectedOptions, (o) => o.index).join(","));
      }
    };
    walk(document);
    for (const el of scrolled) {
      if (el.isConnected) add(el.scrollTop + "," + el.scrollLeft);
      else scrolled.delete(el);
    }
    add([scrollX, scrollY, innerWidth, innerHeight].join(","));
    return { grew, print: String(h >>> 0) };
  };
  const check = (since) => {
    if (counts(mo.takeRecords())) w.dirty = true;
    const { grew, print } = look();
    if (grew) w.dirty = true;
    return { same: !w.dirty && since === w.epoch && print === w.print && window.length === 0, print };
  };
  // Whether nothing changed since the epoch, leaving the epoch as it is.
  w.peek = (since) => ({ same: check(since).same, epoch: w.epoch });
  w.take = (since) => {
    const { same, print } = check(since);
    w.dirty = false;
    w.epoch += 1;
    w.print = print;
    return { same, epoch: w.epoch };
  };
  observe(document);
  globalThis.__holmWatch = w;
  return 0;
})()`;

export interface Taken {
  /** Nothing a snapshot shows changed since the epoch asked about. */
  same: boolean;
  /** The epoch that starts now: a snapshot taken after this answer is current as of it. */
  epoch: number;
}

const warming = new WeakMap<Page, { gen: number; done: Promise<unknown> }>();

/**
 * Makes the page's world and starts its watcher, in the background: the first take in a new
 * document then costs one round trip, not the five of making a world and loading the watcher.
 * Called at the start of each page call, once per document (`gen` counts the page's navigations;
 * a world that went with its document all the same is made again by the take itself).
 */
export function warm(page: Page, gen: number): void {
  if (warming.get(page)?.gen === gen) return;
  warming.set(page, { gen, done: inWorld(page, "0", { watch: WATCH }).catch(() => undefined) });
}

/** Whether nothing changed since `since` (an epoch from an earlier take); starts a new epoch. */
export function take(page: Page, since: number | undefined): Promise<Taken> {
  return ask(page, "take", since);
}

/** Whether nothing changed since `since`, the epoch left as it is (`epoch` is the current one). */
export function peek(page: Page, since: number): Promise<Taken> {
  return ask(page, "peek", since);
}

async function ask(page: Page, what: "take" | "peek", since: number | undefined): Promise<Taken> {
  // Two worlds made at once would each get a watcher, and the epochs of one mean nothing to the other.
  await warming.get(page)?.done;
  try {
    return await inWorld<Taken>(page, `__holmWatch.${what}(${since ?? -1})`, { watch: WATCH });
  } catch {
    // The page could not be asked (it navigated, a dialog holds it): a change, no epoch.
    return { same: false, epoch: -1 };
  }
}
