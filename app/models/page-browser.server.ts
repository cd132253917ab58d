import { type Browser, type BrowserContext, type ConsoleMessage, type Dialog, type Page, chromium } from "playwright-core";
import { AGENT_PORT, type TabInfo, agentCall } from "~/protocol/agent";
import { ApiError, isApiError, notFound } from "~/utils/api-error.server";
import { agentFetch, readCapped, signAgentRequest } from "./agent.server";
import { lookAhead } from "./page-element-snap.server";
import type { RunningBox } from "./box.server";
import { type ScreenTarget, callAgent } from "./screen.server";
import { takeoverOf } from "./takeover.server";
import { cutText } from "~/utils/cut-text";

// Each screen's Chromium, driven by playwright-core over CDP: one connection per screen, opened
// on first use and kept warm, dropped when Chromium or the box goes away and opened again on the
// next call. The connection goes through the agent's DevTools relay (signed, images/README.md)
// at the address the runtime gives for the box, so nothing in the box listens unauthenticated
// and a remote runtime only has to give another address (a tunnel) for this to work unchanged.
// Tabs are named as the agent names them (target id or the label open_url gave), and the front
// tab is the agent's (Chromium's /json/list order), so pixel steps and page steps agree.

export type { TabInfo };

export interface ConsoleEntry {
  type: string;
  text: string;
  url?: string;
  line?: number;
  at_ms: number;
}

/** An open JavaScript dialog, waiting for a `dialog` step or the auto-dismiss timer. */
export interface PendingDialog {
  type: string;
  message: string;
  default_value: string;
  opened_ms: number;
  dialog: Dialog;
  timer: NodeJS.Timeout;
}

/** Unanswered dialogs are dismissed after this long, so a page never stays wedged (seed 004). */
export const DIALOG_AUTO_DISMISS_MS = 4000;
/** Console messages kept per tab (the oldest go first). */
export const CONSOLE_KEPT = 1000;
const CONNECT_MS = 15_000;

interface PageState {
  targetId?: Promise<string>;
  console: ConsoleEntry[];
  dialog?: PendingDialog;
  /** Waiters for the next dialog (a `dialog` step that came first). */
  dialogWaiters: ((d: PendingDialog) => void)[];
}

const states = new WeakMap<Page, PageState>();

export function pageState(page: Page): PageState {
  let s = states.get(page);
  if (!s) states.set(page, (s = { console: [], dialogWaiters: [] }));
  return s;
}

function watchPage(page: Page, boxId: string, screen: number): void {
  const s = pageState(page);
  page.on("console", (m: ConsoleMessage) => {
    const loc = m.location();
    s.console.push({ type: m.type(), text: cutText(m.text(), 10_000), url: loc.url || undefined, line: loc.url ? loc.lineNumber : undefined, at_ms: Date.now() });
    if (s.console.length > CONSOLE_KEPT) s.console.splice(0, s.console.length - CONSOLE_KEPT);
  });
  page.on("pageerror", (e: Error) => {
    s.console.push({ type: "error", text: cutText(`Uncaught ${e.message}`, 10_000), at_ms: Date.now() });
    if (s.console.length > CONSOLE_KEPT) s.console.splice(0, s.console.length - CONSOLE_KEPT);
  });
  // With a listener Playwright leaves the dialog open; it waits for a `dialog` step, and is
  // dismissed after DIALOG_AUTO_DISMISS_MS if none comes.
  page.on("dialog", (dialog: Dialog) => {
    const pending: PendingDialog = {
      type: dialog.type(),
      message: dialog.message(),
      default_value: dialog.defaultValue(),
      opened_ms: Date.now(),
      dialog,
      timer: setTimeout(function dismiss() {
        // A person who holds the screen answers it themselves, in the viewer.
        if (takeoverOf(boxId, screen)) {
          pending.timer = setTimeout(dismiss, DIALOG_AUTO_DISMISS_MS);
          pending.timer.unref();
          return;
        }
        if (s.dialog === pending) s.dialog = undefined;
        dialog.dismiss().catch(() => undefined);
      }, DIALOG_AUTO_DISMISS_MS),
    };
    pending.timer.unref();
    s.dialog = pending;
    for (const w of s.dialogWaiters.splice(0)) w(pending);
  });
}

/** Takes the open dialog of the page (waiting up to `withinMs` for one), or undefined. */
export async function takeDialog(page: Page, withinMs: number): Promise<PendingDialog | undefined> {
  const s = pageState(page);
  const now = s.dialog;
  if (now) {
    s.dialog = undefined;
    clearTimeout(now.timer);
    return now;
  }
  if (withinMs <= 0) return undefined;
  return new Promise((resolve) => {
    const waiter = (d: PendingDialog) => {
      clearTimeout(timer);
      if (s.dialog === d) s.dialog = undefined;
      clearTimeout(d.timer);
      resolve(d);
    };
    const timer = setTimeout(() => {
      s.dialogWaiters = s.dialogWaiters.filter((w) => w !== waiter);
      resolve(undefined);
    }, withinMs);
    s.dialogWaiters.push(waiter);
  });
}

/** Tabs Playwright saw open or close, per screen: a tab listing kept for a batch is stale after one. */
const tabChanges = new Map<string, number>();
const tabsKey = (boxId: string, screen: number) => `${boxId}/${screen}`;
const tabChanged = (key: string) => tabChanges.set(key, (tabChanges.get(key) ?? 0) + 1);

function watchContext(context: BrowserContext, boxId: string, screen: number): void {
  const key = tabsKey(boxId, screen);
  const watch = (p: Page) => {
    watchPage(p, boxId, screen);
    p.on("close", () => tabChanged(key));
  };
  for (const p of context.pages()) watch(p);
  context.on("page", (p) => {
    tabChanged(key);
    watch(p);
  });
}

const browsers = new Map<string, Promise<Browser>>();

/** The DevTools relay of the box's agent for screen n, as a URL the server can open. */
function relayUrl(box: RunningBox, screen: number, rest: string): string {
  return `ws://${box.address}:${AGENT_PORT}/screens/${screen}/cdp${rest}`;
}

async function connect(box: RunningBox, screen: number): Promise<Browser> {
  // Chromium names its browser endpoint ws://127.0.0.1:<port>/devtools/browser/<uuid>; the
  // relay serves the same path under /screens/n/cdp.
  const versionPath = `/screens/${screen}/cdp/json/version`;
  const res = await agentFetch(box.id, box.address, versionPath, { timeoutMs: CONNECT_MS });
  const text = (await readCapped(res, 64 * 1024)).toString("utf8");
  if (!res.ok) throw new ApiError("screen_unavailable", `screen ${screen}'s browser does not answer (DevTools ${res.status})`, { retryable: true });
  let wsPath: string;
  try {
    wsPath = new URL((JSON.parse(text) as { webSocketDebuggerUrl: string }).webSocketDebuggerUrl).pathname;
  } catch {
    throw new ApiError("transport", `screen ${screen}'s DevTools answered without a browser endpoint`);
  }
  const url = relayUrl(box, screen, wsPath);
  const target = new URL(url);
  const authorization = signAgentRequest(box.id, "GET", target.pathname + target.search);
  let browser: Browser;
  try {
    // noDefaults: the box's browser is also a person's (the viewer): Playwright leaves its
    // downloads (which would otherwise go to a folder on the server's disk, not the box's),
    // focus and media settings as they are.
    browser = await chromium.connectOverCDP(url, { headers: { authorization }, timeout: CONNECT_MS, noDefaults: true });
  } catch (err) {
    throw new ApiError("transport", `the server could not attach to screen ${screen}'s browser: ${(err as Error).message.split("\n")[0]}`, {
      retryable: true,
    });
  }
  for (const c of browser.contexts()) watchContext(c, box.id, screen);
  return browser;
}

/** The screen's browser, attached once and kept; attached again after Chromium or the box restarts. */
export async function browserOf(box: RunningBox, screen: number): Promise<Browser> {
  const key = `${box.id}/${screen}/${box.address}`;
  let p = browsers.get(key);
  if (!p) {
    p = connect(box, screen);
    browsers.set(key, p);
    p.then(
      (b) => b.on("disconnected", () => browsers.get(key) === p && browsers.delete(key)),
      () => browsers.get(key) === p && browsers.delete(key),
    );
  }
  const b = await p;
  if (!b.isConnected()) {
    if (browsers.get(key) === p) browsers.delete(key);
    return browserOf(box, screen);
  }
  return b;
}

/** Lets go of every connection to a box (it is being removed or restarted). */
export function forgetBox(boxId: string): void {
  for (const [key, p] of browsers) {
    if (!key.startsWith(`${boxId}/`)) continue;
    browsers.delete(key);
    p.then((b) => b.close().catch(() => undefined), () => undefined);
  }
  for (const map of [tabChanges, lastPage]) for (const key of map.keys()) if (key.startsWith(`${boxId}/`)) map.delete(key);
}

/** Chromium's target id of a page (asked once per page). */
export function targetIdOf(page: Page): Promise<string> {
  const s = pageState(page);
  s.targetId ??= (async () => {
    const session = await page.context().newCDPSession(page);
    try {
      const info = (await session.send("Target.getTargetInfo")) as { targetInfo: { targetId: string } };
      return info.targetInfo.targetId;
    } finally {
      session.detach().catch(() => undefined);
    }
  })();
  s.targetId.catch(() => (s.targetId = undefined));
  return s.targetId;
}

/**
 * The screen's tabs as the agent lists them (front first, with labels). A browser whose DevTools
 * refuses connections (the box's entrypoint is starting it again after it quit, or waits a minute
 * after it quit over and over: images/x11/entrypoint.sh) is `screen_unavailable`, retryable, as
 * connecting to it is (`connect` above).
 */
export function listTabs(t: ScreenTarget): Promise<TabInfo[]> {
  return callAgent<{ tabs: TabInfo[] }>(t.box, agentCall("tabs", { n: t.screen })).then(
    (r) => r.tabs,
    (err: unknown) => {
      // (An agent of an image from before it says so itself: `failed`, the connection refused.)
      if (!(isApiError(err) && err.code === "failed" && /DevTools .* does not answer: connect ECONNREFUSED/.test(err.message))) throw err;
      throw new ApiError("screen_unavailable", `screen ${t.screen}'s browser does not answer DevTools now (it may be starting again after it quit)`, { retryable: true });
    },
  );
}

export interface TabPage {
  page: Page;
  tab: TabInfo;
  screen: number;
  /** `tab` is from a listing kept for a batch (TabMemo), not read from Chromium for this call. */
  reused?: true;
}

/**
 * A batch's listing of its screen's tabs, kept for its page steps: the agent is asked once per
 * run of page steps, not once per step. The batch drops it after each of the agent's parts (a
 * step there may open, close or bring forward a tab), and it is not used once Playwright has seen
 * a tab open or close.
 */
export interface TabMemo {
  tabs?: TabInfo[];
  changes?: number;
}

/** The Playwright page of a tab (by id or label; the front tab when none is named). */
export async function pageOf(t: ScreenTarget, tab?: string | null, memo?: TabMemo): Promise<TabPage> {
  const key = tabsKey(t.box.id, t.screen);
  const changes = tabChanges.get(key) ?? 0;
  const kept = memo?.tabs && memo.changes === changes ? memo.tabs : undefined;
  // A listing screenOfTab read for this very call is as fresh as a new one.
  const justListed = listedFor.get(t);
  listedFor.delete(t);
  const named = `${key}/${tab ?? ""}`;
  if (!kept && !justListed) {
    // While the agent lists the tabs, the page this name found last is asked whether it changed.
    const guess = lastPage.get(named)?.deref();
    if (guess && !guess.isClosed()) lookAhead(guess);
  }
  const [tabs, browser] = await Promise.all([kept ?? justListed ?? listTabs(t), browserOf(t.box, t.screen)]);
  if (memo && !kept) Object.assign(memo, { tabs, changes });
  const info = tab == null ? tabs[0] : (tabs.find((x) => x.id === tab) ?? tabs.find((x) => x.label === tab));
  if (!info) {
    if (tab == null) throw new ApiError("screen_unavailable", `screen ${t.screen}'s browser has no tab open`, { retryable: true });
    throw notFound(`no tab "${tab}" on screen ${t.screen}`);
  }
  const page = await findPage(browser, info.id);
  if (!page) throw new ApiError("screen_unavailable", `tab ${info.id} is not ready yet`, { retryable: true });
  lastPage.set(named, new WeakRef(page));
  return { page, tab: info, screen: t.screen, ...(kept && { reused: true as const }) };
}

/** The page each tab name (or none: the front tab) of each screen resolved to last. */
const lastPage = new Map<string, WeakRef<Page>>();

async function findPage(browser: Browser, targetId: string): Promise<Page | undefined> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const pages = browser.contexts().flatMap((c) => c.pages());
    const ids = await Promise.all(pages.map((p) => targetIdOf(p).catch(() => "")));
    const i = ids.indexOf(targetId);
    if (i >= 0) return pages[i];
    // A tab opened a moment ago: Playwright hears of it shortly.
    await new Promise((r) => setTimeout(r, 50));
  }
  return undefined;
}

/**
 * For the box-wide routes (`/v1/boxes/{id}/page…`): the screen whose browser has the named tab,
 * or screen 0 when no tab is named.
 */
export async function screenOfTab(box: RunningBox, tab?: string | null): Promise<ScreenTarget> {
  if (tab == null) return { box, screen: 0 };
  // Every screen asked at once; the first (by number) with the tab is the one.
  const listings = await Promise.all(
    Array.from({ length: box.screens }, (_, screen) => listTabs({ box, screen }).catch(() => [] as TabInfo[])),
  );
  const screen = listings.findIndex((tabs) => tabs.some((x) => x.id === tab || x.label === tab));
  if (screen < 0) throw notFound(`no tab "${tab}" in box ${box.id}`);
  const t = { box, screen };
  // The pageOf that follows uses this listing instead of asking the agent again.
  listedFor.set(t, listings[screen]!);
  return t;
}

/** Listings screenOfTab read, for the pageOf of the same call (by its target object). */
const listedFor = new WeakMap<ScreenTarget, TabInfo[]>();

/**
 * Every screen's tabs, for `GET /v1/boxes/{id}/pages`. A screen whose browser is not there now
 * (quit, and not started again yet) has none: one screen's browser quitting (an agent's ctrl+w)
 * made the whole box's list answer 422, another screen's person's tabs with it.
 */
export async function allTabs(box: RunningBox): Promise<(TabInfo & { screen: number })[]> {
  const out: (TabInfo & { screen: number })[] = [];
  for (let screen = 0; screen < box.screens; screen++) {
    const tabs = await listTabs({ box, screen }).catch((err: unknown) => {
      if (isApiError(err) && err.code === "screen_unavailable") return [];
      throw err;
    });
    for (const tab of tabs) out.push({ ...tab, screen });
  }
  return out;
}


