// Top-level windows through EWMH on the warm connection: every property request for every
// window is sent at once, so listing costs about one round trip whatever the count.
import type { Session } from "./screen";
import {
  ATOM_WM_CLASS, ATOM_WM_NAME, CW_HEIGHT, CW_STACK_MODE, CW_WIDTH, CW_X, CW_Y, configureWindow,
  getGeometry, getInputFocus, getProperty, getWindowAttributes, mapWindow, propU32s, queryTree,
  sendClientMessage, sendClientMessageTo, setInputFocus, translateCoordinates,
} from "./x11-requests";
import { AgentError } from "./errors";
import type { Arrange } from "./schema";
import { sleep } from "./util";
import type { WindowInfo } from "./window-types";

export type { WindowInfo };

export const formatWindowId = (id: number): string => `0x${id.toString(16).padStart(8, "0")}`;

async function hasWindowManager(s: Session): Promise<boolean> {
  const p = propU32s(await getProperty(s.conn, s.root, await s.atom("_NET_SUPPORTING_WM_CHECK")));
  return p.length > 0 && p[0] !== 0;
}

/** The client windows, and whether the list came from the window manager (EWMH), which reports its changes. */
async function clientIds(s: Session): Promise<{ ids: number[]; ewmh: boolean }> {
  const list = await getProperty(s.conn, s.root, await s.atom("_NET_CLIENT_LIST"));
  if (list) return { ids: propU32s(list), ewmh: true };
  // No EWMH window manager: mapped, managed-looking children of the root.
  const tree = await queryTree(s.conn, s.root);
  const checks = await Promise.all(
    tree.children.map(async (id) => {
      try {
        const [attrs, cls] = await Promise.all([getWindowAttributes(s.conn, id), getProperty(s.conn, id, ATOM_WM_CLASS)]);
        return attrs.mapState === 2 && !attrs.overrideRedirect && cls !== null ? id : 0;
      } catch {
        return 0;
      }
    }),
  );
  return { ids: checks.filter((id) => id !== 0), ewmh: false };
}

/** The active window, and whether the window manager said it (else it is the input focus, which no event here reports). */
async function activeId(s: Session): Promise<{ id: number; ewmh: boolean }> {
  const p = propU32s(await getProperty(s.conn, s.root, await s.atom("_NET_ACTIVE_WINDOW")));
  if (p.length) return { id: p[0], ewmh: true };
  return { id: await getInputFocus(s.conn), ewmh: false };
}

/**
 * A window of the desktop itself (EWMH type dock or desktop: the tint2 panel), not an app's: it is
 * not listed, so not focused, arranged or closed by id either (the person would lose the dock),
 * as on Wayland, where waybar is a layer surface and no window at all.
 */
const SHELL = "shell";

/** A client window as it is now; `active` is set by the caller, which knows the active window. */
async function describe(s: Session, id: number): Promise<WindowInfo | typeof SHELL | null> {
  const [netName, utf8, netPid, netState, hidden, maxV, maxH, netType, dock, desktop] = await Promise.all([
    s.atom("_NET_WM_NAME"), s.atom("UTF8_STRING"), s.atom("_NET_WM_PID"), s.atom("_NET_WM_STATE"),
    s.atom("_NET_WM_STATE_HIDDEN"), s.atom("_NET_WM_STATE_MAXIMIZED_VERT"), s.atom("_NET_WM_STATE_MAXIMIZED_HORZ"),
    s.atom("_NET_WM_WINDOW_TYPE"), s.atom("_NET_WM_WINDOW_TYPE_DOCK"), s.atom("_NET_WM_WINDOW_TYPE_DESKTOP"),
  ]);
  try {
    const [nameU, nameL, cls, pid, state, type, geo, pos] = await Promise.all([
      getProperty(s.conn, id, netName, utf8),
      getProperty(s.conn, id, ATOM_WM_NAME),
      getProperty(s.conn, id, ATOM_WM_CLASS),
      getProperty(s.conn, id, netPid),
      getProperty(s.conn, id, netState),
      getProperty(s.conn, id, netType),
      getGeometry(s.conn, id),
      translateCoordinates(s.conn, id, s.root, 0, 0),
    ]);
    if (propU32s(type).some((t) => t === dock || t === desktop)) return SHELL;
    const [instance = "", klass = ""] = cls ? cls.value.toString("latin1").split("\0") : [];
    const states = propU32s(state);
    return {
      id: formatWindowId(id),
      // _NET_WM_NAME of another type (xdotool set_window --name writes STRING) comes back empty.
      title: nameU && nameU.type === utf8 ? nameU.value.toString("utf8") : nameL ? nameL.value.toString(nameL.type === utf8 ? "utf8" : "latin1") : "",
      class: klass,
      instance,
      pid: propU32s(pid)[0] ?? null,
      // The outer corner of the client window (its own X border included), which is what
      // _NET_MOVERESIZE_WINDOW with static gravity positions.
      x: pos.x - geo.border,
      y: pos.y - geo.border,
      width: geo.width,
      height: geo.height,
      active: false,
      minimised: states.includes(hidden),
      maximised: states.includes(maxV) && states.includes(maxH),
    };
  } catch {
    return null; // it closed while we asked
  }
}

/** The client windows each session listed last time. */
const lastListed = new WeakMap<Session, number[]>();

/**
 * The screen's client windows. `since`: a mark (`XConnection.mark()`) taken when the caller's
 * operation began; when a round trip begun after it has come back (a batch's input steps end with
 * one), every change made before the operation has been reported, and a listing with nothing
 * reported since is answered without asking the X server anything.
 */
export async function listWindows(s: Session, since?: number): Promise<WindowInfo[]> {
  let kept = s.windows.fresh();
  if (kept && !(since !== undefined && s.conn.answeredSince(since))) {
    // One round trip brings in what changed before this call (another client's change that
    // finished just before it, say), then the flag is current.
    await getInputFocus(s.conn);
    kept = s.windows.fresh();
  }
  if (kept) return kept.map((w) => ({ ...w }));
  const generation = s.windows.begin();
  // The windows of the last listing are asked about together with the list itself: the set
  // rarely changes between two batches, so a listing usually costs one round trip, not two (after
  // a click the X server is busy drawing the page, and each round trip waits behind that).
  const guess = lastListed.get(s) ?? [];
  s.windows.follow(guess);
  const [list, active, guessed] = await Promise.all([clientIds(s), activeId(s), Promise.all(guess.map((id) => describe(s, id)))]);
  lastListed.set(s, list.ids);
  // Listened to before asked about: a change after the answer is reported.
  s.windows.follow(list.ids);
  const known = new Map(guess.map((id, i) => [id, guessed[i]]));
  const all = await Promise.all(list.ids.map((id) => (known.has(id) ? known.get(id)! : describe(s, id))));
  // Gone when asked about (a guess from the last listing, or an id the list still held).
  for (const [ids, got] of [[guess, guessed], [list.ids, all]] as const) ids.forEach((id, i) => got[i] === null && s.windows.forget(id));
  const windows = all
    .filter((w): w is WindowInfo => w !== null && w !== SHELL)
    .map((w) => ({ ...w, active: parseInt(w.id.slice(2), 16) === active.id }));
  s.windows.keep(generation, windows, list.ewmh && active.ewmh);
  return windows.map((w) => ({ ...w }));
}

export async function activeWindow(s: Session): Promise<WindowInfo | null> {
  const windows = await listWindows(s);
  return windows.find((w) => w.active) ?? null;
}

/** A window by id ("0x…", decimal, or number) or, failing that, by class, instance or title. */
export async function findWindow(s: Session, ref: string): Promise<WindowInfo> {
  const windows = await listWindows(s);
  let id: number | null = null;
  if (/^0x[0-9a-f]+$/i.test(ref.trim())) id = parseInt(ref.trim().slice(2), 16);
  else if (/^\d+$/.test(ref.trim())) id = Number(ref.trim());
  if (id !== null) {
    const w = windows.find((x) => parseInt(x.id.slice(2), 16) === id);
    if (w) return w;
    throw new AgentError("not_found", `no window ${ref} on this screen`);
  }
  const q = ref.trim().toLowerCase();
  const byClass = windows.filter((w) => w.class.toLowerCase() === q || w.instance.toLowerCase() === q);
  const byTitle = windows.filter((w) => w.title.toLowerCase().includes(q));
  const hit = byClass[byClass.length - 1] ?? byTitle[byTitle.length - 1];
  if (!hit) throw new AgentError("not_found", `no window matches "${ref}" on this screen`);
  return hit;
}

export async function awaitWindow(s: Session, klass: string, withinMs: number): Promise<WindowInfo> {
  const q = klass.trim().toLowerCase();
  const deadline = Date.now() + withinMs;
  for (;;) {
    const windows = await listWindows(s);
    const hit = windows.filter((w) => w.class.toLowerCase() === q || w.instance.toLowerCase() === q).pop();
    if (hit) return hit;
    if (Date.now() >= deadline) throw new AgentError("timeout", `no window of class "${klass}" appeared within ${withinMs} ms`);
    await sleep(Math.min(100, Math.max(1, deadline - Date.now())));
  }
}

/** Polls until `done` holds for the window (or it is gone), up to `ms`. */
async function until(s: Session, id: number, ms: number, done: (w: WindowInfo | null) => boolean): Promise<WindowInfo | null> {
  const deadline = Date.now() + ms;
  for (;;) {
    const w = (await listWindows(s)).find((x) => parseInt(x.id.slice(2), 16) === id) ?? null;
    if (done(w) || Date.now() >= deadline) return w;
    await sleep(20);
  }
}

const ATOM_WM_NORMAL_HINTS = 40;

/** The sizes a window takes, from its WM_NORMAL_HINTS (ICCCM 4.1.2.3): bounds and step. */
async function sizeSteps(s: Session, id: number): Promise<{ minW: number; minH: number; maxW: number; maxH: number; incW: number; incH: number }> {
  const h = propU32s(await getProperty(s.conn, id, ATOM_WM_NORMAL_HINTS).catch(() => null));
  const flags = h[0] ?? 0;
  const has = (bit: number, i: number) => (flags & bit) !== 0 && h.length > i;
  return {
    minW: has(16, 5) ? h[5] : 1, minH: has(16, 6) ? h[6] : 1,
    maxW: has(32, 7) && h[7] > 0 ? h[7] : Infinity, maxH: has(32, 8) && h[8] > 0 ? h[8] : Infinity,
    incW: has(64, 9) ? Math.max(1, h[9]) : 1, incH: has(64, 10) ? Math.max(1, h[10]) : 1,
  };
}

async function setMaximised(s: Session, id: number, on: boolean): Promise<void> {
  const [state, maxV, maxH] = await Promise.all([s.atom("_NET_WM_STATE"), s.atom("_NET_WM_STATE_MAXIMIZED_VERT"), s.atom("_NET_WM_STATE_MAXIMIZED_HORZ")]);
  sendClientMessage(s.conn, s.root, id, state, [on ? 1 : 0, maxV, maxH, 2]);
}

export async function focusWindow(s: Session, w: WindowInfo): Promise<WindowInfo> {
  const id = parseInt(w.id.slice(2), 16);
  if (await hasWindowManager(s)) {
    // Source 2 ("pager") tells the window manager a user asked, so focus-stealing rules do not apply.
    sendClientMessage(s.conn, s.root, id, await s.atom("_NET_ACTIVE_WINDOW"), [2, 0, 0]);
  } else {
    mapWindow(s.conn, id);
    configureWindow(s.conn, id, [[CW_STACK_MODE, 0]]);
    setInputFocus(s.conn, id);
  }
  const after = await until(s, id, 1500, (x) => x?.active === true);
  if (!after) throw new AgentError("not_found", `window ${w.id} closed`);
  if (!after.active) throw new AgentError("failed", `the window manager did not focus ${w.id}`);
  return after;
}

export async function closeWindow(s: Session, w: WindowInfo): Promise<{ closed: boolean }> {
  const id = parseInt(w.id.slice(2), 16);
  if (await hasWindowManager(s)) {
    sendClientMessage(s.conn, s.root, id, await s.atom("_NET_CLOSE_WINDOW"), [0, 2]);
  } else {
    const [protocols, del] = await Promise.all([s.atom("WM_PROTOCOLS"), s.atom("WM_DELETE_WINDOW")]);
    const ev = [del, 0];
    // Sent to the window itself, as a window manager would.
    sendClientMessageTo(s.conn, id, protocols, ev);
  }
  // 5 s: a loaded machine's Chromium took over 2 s to close a window.
  const after = await until(s, id, 5000, (x) => x === null);
  // A window may ask "save changes?" and stay: that is an answer, not an error.
  return { closed: after === null };
}

export async function arrangeWindow(s: Session, w: WindowInfo, how: Arrange): Promise<WindowInfo> {
  const id = parseInt(w.id.slice(2), 16);
  const wm = await hasWindowManager(s);
  let done: (x: WindowInfo | null) => boolean = () => true;
  if (how.how === "maximise") {
    if (!wm) throw new AgentError("unsupported", "no window manager runs on this screen");
    await setMaximised(s, id, true);
    done = (x) => x?.maximised === true;
  } else if (how.how === "minimise") {
    if (!wm) throw new AgentError("unsupported", "no window manager runs on this screen");
    sendClientMessage(s.conn, s.root, id, await s.atom("WM_CHANGE_STATE"), [3]);
    done = (x) => x?.minimised === true;
  } else if (how.how === "restore") {
    if (!wm) throw new AgentError("unsupported", "no window manager runs on this screen");
    if (w.maximised) await setMaximised(s, id, false);
    if (w.minimised) sendClientMessage(s.conn, s.root, id, await s.atom("_NET_ACTIVE_WINDOW"), [2, 0, 0]);
    done = (x) => x !== null && !x.maximised && !x.minimised;
  } else {
    let cur = w;
    if (w.maximised && wm) {
      await setMaximised(s, id, false);
      cur = (await until(s, id, 500, (x) => x?.maximised === false)) ?? w;
    }
    const move = async (x: number, y: number): Promise<void> => {
      if (wm) {
        // _NET_MOVERESIZE_WINDOW, static gravity (10), x and y set, source 2 (a user's request).
        sendClientMessage(s.conn, s.root, id, await s.atom("_NET_MOVERESIZE_WINDOW"), [10 | (1 << 8) | (1 << 9) | (2 << 12), x, y, 0, 0]);
      } else configureWindow(s.conn, id, [[CW_X, x], [CW_Y, y]]);
    };
    if (how.how === "at") {
      const { x, y } = how.to;
      await move(x, y);
      const first = await until(s, id, 1500, (n) => n === null || (n.x === x && n.y === y) || n.x !== cur.x || n.y !== cur.y);
      // Window managers differ on what static gravity means by a border's width: correct once.
      if (first && (first.x !== x || first.y !== y)) await move(x + (x - first.x), y + (y - first.y));
      done = (n) => n !== null && n.x === x && n.y === y;
    } else {
      if (wm) {
        sendClientMessage(s.conn, s.root, id, await s.atom("_NET_MOVERESIZE_WINDOW"), [10 | (1 << 10) | (1 << 11) | (2 << 12), 0, 0, how.width, how.height]);
      } else configureWindow(s.conn, id, [[CW_WIDTH, how.width], [CW_HEIGHT, how.height]]);
      // Terminals snap to their character cell: the answer is the size within one step of the
      // request, as the window's own size hints allow. (Not "any change of size": a new xterm
      // settles its own size just after it maps, and that change is not ours.)
      const fit = await sizeSteps(s, id);
      const near = (got: number, want: number, min: number, max: number, step: number) => Math.abs(got - Math.min(Math.max(want, min), max)) < step;
      done = (n) => n === null || (near(n.width, how.width, fit.minW, fit.maxW, fit.incW) && near(n.height, how.height, fit.minH, fit.maxH, fit.incH));
    }
  }
  const after = await until(s, id, 1500, done);
  if (!after) throw new AgentError("not_found", `window ${w.id} closed`);
  return after;
}
