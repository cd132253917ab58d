// Tabs of a screen's Chromium through its DevTools endpoints on 127.0.0.1:(HOLM_CDP_PORT_BASE + n).
// The front tab is the first page of /json/list: Chromium sorts it by the time each tab was last
// shown (activation through /json/activate, a click on the tab strip or Ctrl+Tab alike).
import crypto from "node:crypto";
import type { Screen } from "./screen";
import { CdpError, CdpSocket, cdpHttp, listTargets, type CdpTarget } from "./cdp";
import { toRgb, type Rect } from "./frames";
import { decodePngBgrx, encodePng } from "./png";
import { AgentError } from "./errors";
import { sleep } from "./util";
import type { TabInfo } from "../../../app/protocol/agent";

export type { TabInfo };

/** How long open_url waits for `document.readyState` to reach `interactive`. */
export const READY_WITHIN_MS = 15_000;
/** A shown tab answers a capture in tens of milliseconds; a busy renderer gets this long. */
const TAB_CAPTURE_MS = 10_000;
/** A data: URL can be megabytes long, and every batch result lists the tabs: cut what it shows. */
const SHOWN_CHARS = 4096;
const READY = new Set(["interactive", "complete"]);

/** Label → target id, per screen. Labels of tabs that are gone are dropped when the tabs are listed. */
const labels = new WeakMap<Screen, Map<string, string>>();
function labelsOf(screen: Screen): Map<string, string> {
  let m = labels.get(screen);
  if (!m) labels.set(screen, (m = new Map()));
  return m;
}

const cdpPort = (screen: Screen): number => screen.config.cdpPortBase + screen.index;
const cut = (s: string): string => (s.length > SHOWN_CHARS ? `${s.slice(0, SHOWN_CHARS)}…` : s);

function labelOf(screen: Screen, id: string): string | undefined {
  let found: string | undefined;
  for (const [label, to] of labelsOf(screen)) if (to === id) found = label;
  return found;
}

function setLabel(screen: Screen, id: string, label: string | undefined): void {
  if (label === undefined) return;
  const m = labelsOf(screen);
  for (const [l, to] of m) if (to === id) m.delete(l); // one label per tab: the newest
  m.set(label, id);
}

async function pages(screen: Screen, timeoutMs = 5000): Promise<CdpTarget[]> {
  const all = await listTargets(cdpPort(screen), timeoutMs);
  const out = all.filter((t) => t.type === "page");
  const m = labelsOf(screen);
  for (const [l, id] of m) if (!out.some((t) => t.id === id)) m.delete(l);
  return out;
}

function shown(screen: Screen, t: CdpTarget): Omit<TabInfo, "active"> {
  const label = labelOf(screen, t.id);
  return { id: t.id, ...(label !== undefined ? { label } : {}), url: cut(t.url), title: cut(t.title) };
}

const info = (screen: Screen, t: CdpTarget, active: boolean): TabInfo => ({ ...shown(screen, t), active });

/** Every page of the screen's Chromium, the front one `active`. */
export async function listTabs(screen: Screen, timeoutMs = 5000): Promise<TabInfo[]> {
  return (await pages(screen, timeoutMs)).map((t, i) => info(screen, t, i === 0));
}

/** For a batch's result: never fails, and gives up quickly on a Chromium that does not answer. */
export function tabsOrNone(screen: Screen): Promise<TabInfo[]> {
  return listTabs(screen, 1000).catch(() => []);
}

/** A tab by id or, failing that, by label. */
async function findTab(screen: Screen, ref: string): Promise<{ target: CdpTarget; list: CdpTarget[] }> {
  const list = await pages(screen);
  const id = list.some((t) => t.id === ref) ? ref : labelsOf(screen).get(ref);
  const target = list.find((t) => t.id === id);
  if (!target) throw new AgentError("not_found", `no tab "${ref}" on screen ${screen.index}`);
  return { target, list };
}

async function expect200(port: number, method: string, path: string): Promise<string> {
  const r = await cdpHttp(port, method, path);
  if (r.status === 404) throw new AgentError("not_found", `DevTools ${path.split("?")[0]}: ${r.text.trim()}`);
  if (r.status !== 200) throw new AgentError("failed", `DevTools ${path.split("?")[0]} answered ${r.status}: ${r.text.trim().slice(0, 200)}`);
  return r.text;
}

/** Polls the tab list until `done` holds or `ms` pass; returns the last list. */
async function settle(screen: Screen, ms: number, done: (list: CdpTarget[]) => boolean): Promise<CdpTarget[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const list = await pages(screen);
    if (done(list) || Date.now() >= deadline) return list;
    await sleep(15);
  }
}

async function activate(screen: Screen, id: string): Promise<CdpTarget[]> {
  await expect200(cdpPort(screen), "GET", `/json/activate/${encodeURIComponent(id)}`);
  return settle(screen, 1000, (list) => list[0]?.id === id);
}

type Frame = { url?: string; unreachableUrl?: string; loaderId?: string };

/**
 * Waits until the navigation has committed (`committed` says so of the main frame) and the new
 * document is at least `interactive`, or until `deadline`. Returns the last readyState seen.
 */
/**
 * Waits (up to a second) until the document has produced two animation frames: until a new
 * document first paints, Chromium may drop input sent to it, so a click right after open_url
 * would be lost.
 */
async function painted(ws: CdpSocket, deadline: number): Promise<void> {
  const expression = "new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))";
  await ws
    .send("Runtime.evaluate", { expression, awaitPromise: true, returnByValue: true }, Math.max(1, Math.min(1000, deadline - Date.now())))
    .catch(() => undefined);
}

async function waitReady(ws: CdpSocket, deadline: number, committed: (f: Frame) => boolean): Promise<{ state: string; frame: Frame }> {
  let state = "loading";
  let frame: Frame = {};
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) return { state, frame };
    try {
      // Both at once: the session handles them in order, so when the frame tree shows the new
      // document, the evaluation (sent after it) ran in that document too.
      const [tree, r] = await Promise.all([
        ws.send<{ frameTree: { frame: Frame } }>("Page.getFrameTree", {}, left),
        // A document going away mid-evaluation answers with an error: not ready yet.
        ws
          .send<{ result: { value?: unknown } }>("Runtime.evaluate", { expression: "document.readyState", returnByValue: true }, left)
          .catch((err: unknown) => {
            if (err instanceof CdpError) return null;
            throw err;
          }),
      ]);
      frame = tree.frameTree.frame;
      if (committed(frame) && r) {
        state = String(r.result.value ?? "loading");
        if (READY.has(state)) {
          await painted(ws, deadline);
          return { state, frame };
        }
      }
    } catch (err) {
      // A busy renderer misses the deadline; anything else (the tab closed) is an answer.
      if (!(err instanceof AgentError && err.code === "timeout")) throw err;
      return { state, frame };
    }
    await sleep(Math.min(10, Math.max(1, deadline - Date.now())));
  }
}

const wsPath = (t: CdpTarget): string => {
  if (!t.webSocketDebuggerUrl) throw new AgentError("failed", `tab ${t.id} has no DevTools WebSocket (another client is attached?)`);
  return new URL(t.webSocketDebuggerUrl).pathname;
};

export async function openUrl(
  screen: Screen,
  url: string,
  target: "blank" | "current",
  label: string | undefined,
): Promise<{ tab: Omit<TabInfo, "active">; ready_state: string }> {
  const port = cdpPort(screen);
  const deadline = Date.now() + READY_WITHIN_MS;
  const front = target === "current" ? (await pages(screen))[0] : undefined;
  let tab: CdpTarget;
  let ready: { state: string; frame: Frame };
  let error: string | null = null;
  if (front) {
    tab = front;
    setLabel(screen, tab.id, label);
    const ws = await CdpSocket.connect(port, wsPath(tab));
    try {
      const nav = await ws
        .send<{ loaderId?: string; errorText?: string; isDownload?: boolean }>("Page.navigate", { url }, Math.max(1, deadline - Date.now()))
        .catch((err: unknown) => {
          if (err instanceof AgentError && err.code === "timeout") return null; // still loading at the deadline
          throw err;
        });
      if (nav?.errorText && !nav.isDownload) error = nav.errorText;
      // No loaderId: a same-document navigation (a #fragment), which commits at once. A failed
      // one is waited for too, until its error page commits: until then Chromium can drop a close.
      ready = nav && !nav.isDownload
        ? await waitReady(ws, deadline, (f) => !nav.loaderId || f.loaderId === nav.loaderId)
        : { state: nav ? "complete" : "loading", frame: {} };
      // A navigation through DevTools leaves the keyboard where it was: in the address bar on a
      // fresh box (its about:blank tab has it there), where keys typed next then went (a secret
      // too). An address typed there, or a new tab, hands it to the page; so does this.
      await ws.send("Page.bringToFront", {}, Math.max(1, Math.min(1000, deadline - Date.now()))).catch(() => undefined);
    } finally {
      ws.close();
    }
  } else {
    // Chromium wants PUT here, and unescapes the query once: the URL goes in percent-encoded.
    const created = JSON.parse(await expect200(port, "PUT", `/json/new?${encodeURIComponent(url)}`)) as CdpTarget;
    tab = created;
    setLabel(screen, tab.id, label);
    const [ws] = await Promise.all([CdpSocket.connect(port, wsPath(tab)), expect200(port, "GET", `/json/activate/${encodeURIComponent(tab.id)}`)]);
    try {
      // Until the navigation commits, the new tab shows its initial empty document (frame URL ""
      // or about:blank), which is already "complete": wait for the frame to leave it.
      const staysBlank = url === "about:blank";
      ready = await waitReady(ws, deadline, (f) => staysBlank || !!f.unreachableUrl || (!!f.url && f.url !== "about:blank"));
    } finally {
      ws.close();
    }
    if (ready.frame.unreachableUrl) error = "the page did not load";
  }
  if (error) throw new AgentError("failed", `${url.length > 200 ? `${url.slice(0, 200)}…` : url}: ${error} (tab ${tab.id})`);
  const now = (await pages(screen)).find((t) => t.id === tab.id) ?? tab;
  return { tab: shown(screen, now), ready_state: ready.state };
}

export async function focusTab(screen: Screen, ref: string): Promise<{ tab: TabInfo }> {
  const { target } = await findTab(screen, ref);
  const list = await activate(screen, target.id);
  const now = list.find((t) => t.id === target.id);
  if (!now) throw new AgentError("not_found", `tab ${target.id} closed`);
  if (list[0]?.id !== target.id) throw new AgentError("failed", `Chromium did not bring tab ${target.id} to the front`);
  return { tab: info(screen, now, true) };
}

/**
 * Chromium quits when its last tab or window closes. The box's entrypoint then starts it again
 * (a second or two, its other windows and DevTools clients gone; a sixth time within a minute,
 * only after a pause). A kiosk browser shows a blank page instead, at once: so before the
 * last tab goes, a blank one is opened (in a window of its own when `newWindow`, for a window
 * that closes with all its tabs).
 */
export async function openBlank(screen: Screen, newWindow: boolean): Promise<void> {
  const port = cdpPort(screen);
  if (!newWindow) {
    await expect200(port, "PUT", `/json/new?${encodeURIComponent("about:blank")}`);
    return;
  }
  const version = JSON.parse(await expect200(port, "GET", "/json/version")) as { webSocketDebuggerUrl?: string };
  if (!version.webSocketDebuggerUrl) throw new AgentError("failed", "DevTools named no browser WebSocket");
  const ws = await CdpSocket.connect(port, new URL(version.webSocketDebuggerUrl).pathname);
  try {
    await ws.send("Target.createTarget", { url: "about:blank", newWindow: true });
  } finally {
    ws.close();
  }
}

/** Whether a window is one of the box's Chromium windows (X11 class or Wayland app id). */
export const isBrowserWindow = (w: { class: string; instance: string }): boolean => /^chromium/i.test(w.class) || /^chromium/i.test(w.instance);

export async function closeTab(screen: Screen, ref: string): Promise<{ tab: TabInfo; closed: boolean }> {
  const { target, list } = await findTab(screen, ref);
  const before = info(screen, target, list[0]?.id === target.id);
  if (list.length === 1) await openBlank(screen, false);
  const gone = (l: CdpTarget[]): boolean => !l.some((t) => t.id === target.id);
  // Chromium answers "Target is closing" and may still drop the close (seen when it arrives while
  // the tab commits a navigation), so it is sent twice if need be. A "leave site?" tab stays.
  let after: CdpTarget[] = [];
  for (const ms of [700, 2000]) {
    // 404 on the second try: it closed in between.
    await expect200(cdpPort(screen), "GET", `/json/close/${encodeURIComponent(target.id)}`).catch((err: unknown) => {
      if (!(ms > 700 && err instanceof AgentError && err.code === "not_found")) throw err;
    });
    after = await settle(screen, ms, gone);
    if (gone(after)) break;
  }
  return { tab: before, closed: gone(after) };
}

/**
 * The `capture` of a tab: its page as DevTools draws it (Page.captureScreenshot). Chromium paints
 * only the tabs it shows: a hidden one answered after seconds, not at all, or with the image of
 * an earlier request (Chromium 14x on Xvfb), so it is refused, and never brought forward here
 * (a capture is not input: it runs while a person holds the screen). `region` is in the page's
 * viewport; `scale` (percent) is applied to the pixels here, as for a capture of the screen.
 */
export async function captureTab(
  screen: Screen,
  ref: string,
  opts: { region?: Rect; scale?: number },
): Promise<{ tab: string; hash: string; unchanged: false; png_base64: string; width: number; height: number }> {
  const { target } = await findTab(screen, ref);
  const ws = await CdpSocket.connect(cdpPort(screen), wsPath(target));
  let png: Buffer;
  try {
    const shown = await ws.send<{ result: { value?: unknown } }>("Runtime.evaluate", { expression: "document.visibilityState", returnByValue: true });
    if (shown.result.value !== "visible") {
      throw new AgentError("failed", `tab ${target.id} is not shown, and Chromium draws only the tabs it shows: bring it to the front (on_tab) first`);
    }
    let clip: Record<string, number> | undefined;
    if (opts.region) {
      // A clip is in document coordinates: the viewport's scroll offset is added.
      const m = await ws.send<{ cssVisualViewport: { pageX: number; pageY: number } }>("Page.getLayoutMetrics");
      const r = opts.region;
      clip = { x: m.cssVisualViewport.pageX + r.x, y: m.cssVisualViewport.pageY + r.y, width: r.width, height: r.height, scale: 1 };
    }
    const shot = await ws.send<{ data: string }>("Page.captureScreenshot", { format: "png", ...(clip ? { clip } : {}) }, TAB_CAPTURE_MS);
    png = Buffer.from(shot.data, "base64");
  } finally {
    ws.close();
  }
  const img = await decodePngBgrx(png).catch((err: Error) => {
    throw new AgentError("failed", `DevTools gave no usable image of tab ${target.id}: ${err.message}`);
  });
  const scale = opts.scale ?? 100;
  const width = Math.max(1, Math.round((img.width * scale) / 100));
  const height = Math.max(1, Math.round((img.height * scale) / 100));
  const hash = crypto.createHash("sha1").update(`tab ${target.id},${width},${height};`).update(img.px).digest("hex");
  if (scale !== 100) png = await encodePng(toRgb(img.px, img.width, img.height, width, height), width, height);
  return { tab: target.id, hash, unchanged: false, png_base64: png.toString("base64"), width, height };
}
