// One function per step type. Batches and the single-purpose routes both come through `runStep`.
import type { Screen } from "./screen";
import type { Desk } from "./wayland";
import { astralIntoChromium, awaitWaylandWindow, findWaylandWindow, onWaylandWindow, waylandWindows } from "./wayland-views";
import { DEFAULT_AWAIT_WINDOW_MS, DEFAULT_HOLD_MS, DEFAULT_SETTLE_MS, DEFAULT_STILL_WITHIN_MS, type LaterStepType, type Step, type StepOf, type StepType } from "./schema";
import { planPath, randomSeed, type Motion, type Point } from "./motion";
import { BUTTONS } from "./holds";
import { HELD_KEYSYM, keyLabel, keysymFor, keysymLabel, parseChord } from "./keysyms";
import { captureFrame, waitStill } from "./frames";
import { activeWindow, arrangeWindow, awaitWindow, closeWindow, findWindow, focusWindow, listWindows } from "./windows";
import { readClipboard, writeClipboard } from "./clipboard";
import { recordingStatus, startRecording, stopRecording } from "./record";
import { launch, runExec } from "./exec";
import { glob, grep, listFiles, readFile, writeFile } from "./files";
import { captureTab, closeTab, focusTab, isBrowserWindow, listTabs, openBlank, openUrl } from "./pages";
import type { WindowInfo } from "./window-types";
import { AgentError } from "./errors";
import { widgetOp } from "./widgets";
import { sleep } from "./util";

type Data = Record<string, unknown>;
type Runner<T extends StepType> = (screen: Screen, step: StepOf<T>) => Promise<Data>;

/** Between the two clicks of a double click: well inside every toolkit's interval (fluxbox 250 ms). */
const DOUBLE_CLICK_GAP_MS = 20;

/** Pause between the hops of a drag, so toolkits that watch motion (HTML drag and drop) see it. */
const DRAG_PAUSE_MS = 12;

function onScreen(s: Desk, p: Point, what: string): Point {
  const x = Math.round(p.x);
  const y = Math.round(p.y);
  if (x < 0 || y < 0 || x >= s.width || y >= s.height) {
    throw new AgentError("bad_request", `${what} (${x}, ${y}) is outside the ${s.width}×${s.height} screen`);
  }
  return { x, y };
}

function pointer(s: Desk): Promise<Point> {
  return s.pointer();
}

/**
 * The round trip that ends an input step (which surfaces any X error its input caused) and the
 * pointer after it, asked together: both requests go out in one write and come back in order, so
 * this costs one round trip, not two.
 */
async function syncedPointer(s: Desk): Promise<Point> {
  // XTEST: also waits out a window manager's hold on a press (press-watch.ts), so the next step
  // never queues behind it.
  if (s.input.settledPointer) return s.input.settledPointer();
  const [, p] = await Promise.all([s.input.sync(), pointer(s)]);
  return p;
}

/** Moves the pointer to `to` along the planned path; returns the seed a human path used. */
async function moveTo(s: Desk, to: Point, motion: Motion = "instant", seed?: number): Promise<Data> {
  const from = motion === "instant" ? to : await pointer(s);
  const used = seed ?? randomSeed();
  const plan = planPath(from, to, motion, used, s.width, s.height);
  for (let i = 0; i < plan.points.length; i++) {
    await s.input.move(plan.points[i].x, plan.points[i].y);
    if (plan.delays[i] > 0) {
      await s.input.sync();
      await sleep(plan.delays[i]);
    }
  }
  // An instant move is one motion event: the step's own round trip after its input (which every
  // caller makes) covers it, and the server handles the motion before what follows it anyway.
  if (plan.points.length > 1 || motion !== "instant") await s.input.sync();
  return motion === "human" ? { seed: used, points: plan.points.length } : motion === "smooth" ? { points: plan.points.length } : {};
}

/** Presses `held` modifiers (those not already down) around `fn`. */
async function withHeld<T>(screen: Screen, held: string[] | undefined, fn: () => Promise<T>): Promise<T> {
  const pressed: number[] = [];
  try {
    for (const name of held ?? []) {
      const ks = HELD_KEYSYM[name as keyof typeof HELD_KEYSYM];
      if (screen.holds.isKeyHeld(ks)) continue;
      await screen.holds.pressKey(ks, name, DEFAULT_HOLD_MS, "batch");
      pressed.push(ks);
    }
    return await fn();
  } finally {
    for (const ks of pressed.reverse()) await screen.holds.releaseKey(ks, false);
  }
}

async function clickOnce(screen: Screen, button: number): Promise<void> {
  await screen.holds.pressButton(button, DEFAULT_HOLD_MS, "batch");
  await screen.holds.releaseButton(button, false);
}

const button = (b: string | undefined): number => BUTTONS[b ?? "left"];

async function pressChord(screen: Screen, s: Desk, chord: string): Promise<void> {
  const c = parseChord(chord);
  const mods: number[] = [];
  for (const m of c.modifiers) {
    if (screen.holds.isKeyHeld(m)) continue;
    await screen.holds.pressKey(m, keysymLabel(m), DEFAULT_HOLD_MS, "batch");
    mods.push(m);
  }
  if (c.key !== null) {
    const token = await s.input.keyDown(c.key);
    await s.input.keyUp(token);
  }
  for (const m of mods.reverse()) await screen.holds.releaseKey(m, false);
}

/**
 * Before Chromium's last window closes, a blank window of its own: otherwise Chromium quits
 * (pages.ts openBlank). Other windows close as asked. The close waits (up
 * to 5 s) for the blank window to be on the screen: Chromium answers before it maps it, and on a
 * loaded machine the next call's window list had no browser in it.
 */
async function keepBrowserOpen(screen: Screen, w: WindowInfo, windows: () => Promise<WindowInfo[]>): Promise<void> {
  const all = await windows();
  if (!isBrowserWindow(w) || all.filter(isBrowserWindow).length > 1) return;
  await openBlank(screen, true);
  const deadline = Date.now() + 5000;
  while (!(await windows()).some((x) => isBrowserWindow(x) && x.id !== w.id) && Date.now() < deadline) await sleep(50);
}

const list = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/**
 * Steps the agent does not run: pages by element run in the server, through Playwright
 * (docs/decisions/0010), which never sends them here: `unsupported`, so a batch stops there (or
 * goes on with `keep_going`).
 */
async function notBuilt(_screen: Screen, st: StepOf<LaterStepType>): Promise<Data> {
  throw new AgentError("unsupported", `page steps (${st.type}) run in the server, not in the box`);
}

const RUNNERS: { [T in StepType]: Runner<T> } = {
  async move(screen, st) {
    const s = await screen.desk();
    const data = await moveTo(s, onScreen(s, st.to, "to"), st.motion, st.seed);
    if (st.pause_ms) {
      await s.input.sync(); // the pause runs from when the pointer got there
      await sleep(st.pause_ms);
    }
    return { ...data, at: await syncedPointer(s) };
  },
  async click(screen, st) {
    const s = await screen.desk();
    const data = st.at ? await moveTo(s, onScreen(s, st.at, "at"), st.motion, st.seed) : {};
    await withHeld(screen, st.held, () => clickOnce(screen, button(st.button)));
    return { ...data, at: await syncedPointer(s) };
  },
  async double_click(screen, st) {
    const s = await screen.desk();
    const data = st.at ? await moveTo(s, onScreen(s, st.at, "at"), st.motion, st.seed) : {};
    await s.input.doubleClick(button(st.button), DOUBLE_CLICK_GAP_MS);
    return { ...data, at: await syncedPointer(s) };
  },
  async drag(screen, st) {
    const s = await screen.desk();
    const to = onScreen(s, st.to, "to");
    const from = onScreen(s, st.from, "from");
    const b = button(st.button);
    const data = await withHeld(screen, st.held, async () => {
      await moveTo(s, from, st.motion, st.seed);
      await screen.holds.pressButton(b, DEFAULT_HOLD_MS, "batch");
      await s.input.sync();
      await sleep(DRAG_PAUSE_MS);
      // A first small step crosses every toolkit's drag threshold before the long move.
      const nudge = { x: from.x + Math.sign(to.x - from.x) * 4, y: from.y + Math.sign(to.y - from.y) * 4 };
      await s.input.move(nudge.x, nudge.y);
      // Once the pointer is seen past the press, the page has it: the long move is planned from
      // where the pointer really is and reaches the page as motion, not merged in a queue.
      await syncedPointer(s);
      await sleep(DRAG_PAUSE_MS);
      let moved: Data = {};
      if ((st.motion ?? "instant") === "instant") {
        await s.input.move(Math.round((from.x + to.x) / 2), Math.round((from.y + to.y) / 2));
        await s.input.sync();
        await sleep(DRAG_PAUSE_MS);
        await s.input.move(to.x, to.y);
      } else {
        moved = await moveTo(s, to, st.motion, st.seed);
      }
      await s.input.sync();
      await sleep(DRAG_PAUSE_MS);
      await screen.holds.releaseButton(b, false);
      return moved;
    });
    return { ...data, at: await syncedPointer(s) };
  },
  async path(screen, st) {
    const s = await screen.desk();
    const pts = st.through.map((p, i) => onScreen(s, p, `through[${i}]`));
    const b = button(st.button);
    const seed = st.seed ?? randomSeed();
    await withHeld(screen, st.held, async () => {
      await moveTo(s, pts[0], st.motion, seed);
      await screen.holds.pressButton(b, DEFAULT_HOLD_MS, "batch");
      await s.input.sync();
      // Segment i uses seed + i: the whole path is still determined by one seed.
      for (let i = 1; i < pts.length; i++) {
        await moveTo(s, pts[i], st.motion ?? "smooth", (seed + i) >>> 0);
        // The next segment starts from where the pointer is read: past the press, not frozen at it (as in drag).
        if (i === 1) await syncedPointer(s);
      }
      await sleep(DRAG_PAUSE_MS);
      await screen.holds.releaseButton(b, false);
    });
    return { at: await syncedPointer(s), ...(st.motion === "human" ? { seed } : {}) };
  },
  async mouse_down(screen, st) {
    const s = await screen.desk();
    const data = st.at ? await moveTo(s, onScreen(s, st.at, "at"), st.motion, st.seed) : {};
    await screen.holds.pressButton(button(st.button), st.hold_ms ?? DEFAULT_HOLD_MS, st.hold_ms !== undefined ? "timed" : "batch");
    return { ...data, at: await syncedPointer(s), ...screen.holds.snapshot() };
  },
  async mouse_up(screen, st) {
    const s = await screen.desk();
    if (st.at) await moveTo(s, onScreen(s, st.at, "at"));
    const wasHeld = await screen.holds.releaseButton(button(st.button), false);
    return { at: await syncedPointer(s), was_held: wasHeld };
  },
  async scroll(screen, st) {
    const s = await screen.desk();
    if (st.at) await moveTo(s, onScreen(s, st.at, "at"));
    const dy = st.dy ?? 0;
    const dx = st.dx ?? 0;
    if (dx === 0 && dy === 0) throw new AgentError("bad_request", "scroll needs dx or dy");
    // Wheel buttons: 4 up, 5 down, 6 left, 7 right. One press and release per notch.
    for (let i = 0; i < Math.abs(dy); i++) {
      await s.input.button(dy > 0 ? 5 : 4, true);
      await s.input.button(dy > 0 ? 5 : 4, false);
    }
    for (let i = 0; i < Math.abs(dx); i++) {
      await s.input.button(dx > 0 ? 7 : 6, true);
      await s.input.button(dx > 0 ? 7 : 6, false);
    }
    return { at: await syncedPointer(s), dx, dy };
  },
  async type(screen, st) {
    const s = await screen.desk();
    const astralAsSurrogates = screen.isWayland && (await astralIntoChromium(await screen.wayland(), st.text));
    await s.input.typeText(st.text, st.delay_ms ?? 0, { astralAsSurrogates });
    return { typed: Array.from(st.text).length, via: s.input.kind };
  },
  async press(screen, st) {
    const s = await screen.desk();
    const chords = [...list(st.chord), ...list(st.then)];
    for (const c of chords) parseChord(c); // refuse a bad name before pressing anything
    await withHeld(screen, st.held, async () => {
      for (const c of chords) await pressChord(screen, s, c);
    });
    await s.input.sync();
    return { pressed: chords };
  },
  async key_down(screen, st) {
    const s = await screen.desk();
    const ks = keysymFor(st.key);
    await screen.holds.pressKey(ks, keyLabel(st.key), st.hold_ms ?? DEFAULT_HOLD_MS, st.hold_ms !== undefined ? "timed" : "batch");
    await s.input.sync();
    return { key: keyLabel(st.key), ...screen.holds.snapshot() };
  },
  async key_up(screen, st) {
    const s = await screen.desk();
    const wasHeld = await screen.holds.releaseKey(keysymFor(st.key), false);
    await s.input.sync();
    return { key: keyLabel(st.key), was_held: wasHeld };
  },
  async wait(_screen, st) {
    await sleep(st.ms);
    return { waited_ms: st.ms };
  },
  async wait_still(screen, st) {
    return { ...(await waitStill(screen, st.settle_ms ?? DEFAULT_SETTLE_MS, st.within_ms ?? DEFAULT_STILL_WITHIN_MS)) };
  },
  async await_window(screen, st) {
    if (screen.isWayland) return { window: await awaitWaylandWindow(await screen.wayland(), st.what.class, st.what.within_ms ?? DEFAULT_AWAIT_WINDOW_MS) };
    const s = await screen.session();
    return { window: await awaitWindow(s, st.what.class, st.what.within_ms ?? DEFAULT_AWAIT_WINDOW_MS) };
  },
  async capture(screen, st) {
    const { tab, ...what } = st.what ?? {};
    return { ...(tab === undefined ? await captureFrame(screen, what) : await captureTab(screen, tab, what)) };
  },
  async cursor(screen) {
    const s = await screen.desk();
    return { ...(await pointer(s)) };
  },
  async windows(screen, st) {
    if (screen.isWayland) {
      const all = await waylandWindows(await screen.wayland());
      return st.active ? { window: all.find((w) => w.active) ?? null } : { windows: all };
    }
    const s = await screen.session();
    if (st.active) return { window: await activeWindow(s) };
    return { windows: await listWindows(s) };
  },
  async on_window(screen, st) {
    if (screen.isWayland) {
      const desk = await screen.wayland();
      if (st.what.do !== "close") return onWaylandWindow(desk, st.window, st.what);
      const w = await findWaylandWindow(desk, st.window);
      await keepBrowserOpen(screen, w, () => waylandWindows(desk));
      return onWaylandWindow(desk, w.id, st.what);
    }
    const s = await screen.session();
    const w = await findWindow(s, st.window);
    if (st.what.do === "focus") return { window: await focusWindow(s, w) };
    if (st.what.do === "close") {
      await keepBrowserOpen(screen, w, () => listWindows(s));
      return { window: w.id, ...(await closeWindow(s, w)) };
    }
    const { do: _arrange, ...how } = st.what;
    return { window: await arrangeWindow(s, w, how) };
  },
  async launch(screen, st) {
    return { ...(await launch(st.argv, screen.display, screen.config.home)) };
  },
  async clipboard(screen, st) {
    const selection = st.selection ?? "clipboard";
    if (st.text !== undefined) return { ...(await writeClipboard(screen.display, selection, st.text)) };
    return { ...(await readClipboard(screen.display, selection)) };
  },
  async record(screen, st) {
    if (st.what.do === "start") return { ...(await startRecording(screen, st.what.fps ?? 12)) };
    if (st.what.do === "stop") return { ...(await stopRecording(screen)) };
    return { ...recordingStatus(screen) };
  },
  async exec(screen, st) {
    const w = st.what;
    return { ...(await runExec(w.argv, { timeoutMs: w.timeout_ms, env: w.env, display: screen.display, home: screen.config.home })) };
  },
  async read_file(screen, st) {
    return { ...(await readFile(st.path, screen.config.home)) };
  },
  async write_file(screen, st) {
    return { ...(await writeFile(st.what.path, st.what.contents_base64, screen.config.home)) };
  },
  async list_files(screen, st) {
    return { ...(await listFiles(st.path, screen.config.home)) };
  },
  async grep(screen, st) {
    return { ...(await grep(st.what, screen.config.home)) };
  },
  async glob(screen, st) {
    return { ...(await glob(st.what.pattern, st.what.path, st.what.limit, screen.config.home)) };
  },
  async open_url(screen, st) {
    return { ...(await openUrl(screen, st.url, st.target ?? "blank", st.label)) };
  },
  async tabs(screen) {
    return { tabs: await listTabs(screen) };
  },
  async on_tab(screen, st) {
    return { ...(st.close ? await closeTab(screen, st.tab) : await focusTab(screen, st.tab)) };
  },
  on_page: notBuilt,
  look: notBuilt,
  snapshot: notBuilt,
  read: notBuilt,
  evaluate: notBuilt,
  page_shot: notBuilt,
  dialog: notBuilt,
  async on_node(_screen, st) {
    return widgetOp(st.what);
  },
};

export function runStep(screen: Screen, step: Step): Promise<Data> {
  const run = RUNNERS[step.type] as Runner<StepType>;
  return run(screen, step);
}
