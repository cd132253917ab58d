// Pointer and key injection. XTEST on the warm X connection is the normal path (each event is
// one 36-byte request, no process spawn); xdotool through argv is the fallback.
import type { XConnection } from "./x11-wire";
import { EV_BUTTON_PRESS, EV_BUTTON_RELEASE, EV_KEY_PRESS, EV_KEY_RELEASE, EV_MOTION, fakeInput, getInputFocus, queryPointer } from "./x11-requests";
import { textUnits, type KeyHooks, type Keyboard } from "./keyboard";
import type { KeyDelivery } from "./key-delivery";
import { KS } from "./keysyms";
import { AgentError } from "./errors";
import { sleep } from "./util";
import type { Point } from "./motion";
import { PressWatch } from "./press-watch";

/** What must be undone to release a key pressed with `keyDown`. */
export interface KeyToken {
  keysym: number;
  code?: number;
  shift?: boolean;
}

export interface InputBackend {
  readonly kind: "xtest" | "xdotool" | "wayvnc";
  move(x: number, y: number): Promise<void>;
  button(button: number, down: boolean): Promise<void>;
  /** Two clicks `gapMs` apart, as the X server times them (not as this process gets scheduled). */
  doubleClick(button: number, gapMs: number): Promise<void>;
  keyDown(keysym: number): Promise<KeyToken>;
  keyUp(token: KeyToken): Promise<void>;
  /**
   * Types `text`; newlines become Return and tabs Tab. `astralAsSurrogates` (Wayland, Chromium in
   * front): a character beyond U+FFFF goes as its two UTF-16 units, one key each.
   */
  typeText(text: string, delayMs: number, opts?: { astralAsSurrogates?: boolean }): Promise<void>;
  /**
   * Resolves once the X server has handled everything sent so far, with the window that has
   * the keyboard focus; throws on an X error.
   */
  sync(): Promise<number>;
  /**
   * As `sync`, and the pointer after it; after a press, first waits (a bounded time) until the
   * X server has let the press through (press-watch.ts). Backends with nothing to wait for
   * leave it out.
   */
  settledPointer?(): Promise<Point>;
}

/**
 * A press that follows another closely is generated at least this long after the last event the
 * server handled (XTEST's delay counts from it). Chromium takes a press with the same millisecond
 * timestamp as the previous one for the same event handled twice and leaves it out of click
 * counting: a click followed at once by a double-click elsewhere lost its dblclick.
 */
const PRESS_GAP_MS = 2;
/**
 * A press is close to the previous one while that one is not known handled (no round trip since),
 * or was known handled less than this long ago. Farther apart, the server's clock has moved on
 * by more than this, and the press goes undelayed (a lone click pays nothing).
 */
const PRESS_NEAR_MS = 5;
/** The longest a step waits for a window manager to let a press through, then goes on as before. */
const SETTLE_MAX_MS = 2500;
/**
 * Between looks at a pointer still frozen: at once at first (fluxbox usually answers within a
 * round trip or two, and a click should not pay a timer for it), then up to this long.
 */
const SETTLE_POLL_MAX_MS = 3;

export class XtestInput implements InputBackend {
  readonly kind = "xtest";
  private readonly hooks: KeyHooks;
  /** A press went out with no round trip since; when the last round trip after a press returned. */
  private pressUnsynced = false;
  private pressSyncedAt = -Infinity;
  private readonly watch = new PressWatch();

  constructor(
    private readonly conn: XConnection,
    private readonly xtest: number,
    private readonly root: number,
    readonly keyboard: Keyboard,
    private readonly delivery: KeyDelivery,
  ) {
    this.hooks = delivery.hooks(() => this.sync());
  }

  async move(x: number, y: number): Promise<void> {
    fakeInput(this.conn, this.xtest, EV_MOTION, 0, this.root, x, y);
    this.watch.moved(x, y);
  }

  async button(button: number, down: boolean): Promise<void> {
    this.watch.button(button, down);
    // Wheel ticks (buttons 4–7) are not counted as clicks: a scroll's ticks go without the gap.
    if (down && button <= 3) this.press(button);
    else fakeInput(this.conn, this.xtest, down ? EV_BUTTON_PRESS : EV_BUTTON_RELEASE, button);
  }

  private press(button: number): void {
    const near = this.pressUnsynced || performance.now() - this.pressSyncedAt < PRESS_NEAR_MS;
    fakeInput(this.conn, this.xtest, EV_BUTTON_PRESS, button, 0, 0, 0, near ? PRESS_GAP_MS : 0);
    this.pressUnsynced = true;
  }

  async doubleClick(button: number, gapMs: number): Promise<void> {
    // All four at once: XTEST's delay makes the server space the second click, so a loaded
    // machine that schedules this process late cannot stretch it past a double-click interval.
    this.press(button);
    fakeInput(this.conn, this.xtest, EV_BUTTON_RELEASE, button);
    fakeInput(this.conn, this.xtest, EV_BUTTON_PRESS, button, 0, 0, 0, gapMs);
    fakeInput(this.conn, this.xtest, EV_BUTTON_RELEASE, button);
    this.watch.button(button, true);
    this.watch.button(button, false);
    // The step does not end before the second press is due (the step's round trip normally
    // waits for it anyway): under heavy load a click sent at once after a double-click once had
    // Chromium report the double-click's second press where that click went.
    await sleep(gapMs);
  }

  private key(code: number, down: boolean): void {
    fakeInput(this.conn, this.xtest, down ? EV_KEY_PRESS : EV_KEY_RELEASE, code);
    this.keyboard.keyEvent(code, down);
  }

  /** Notes who has the focus now: keys sent next go to that client, and are confirmed with it. */
  private async aim(): Promise<void> {
    this.delivery.note(await getInputFocus(this.conn));
  }

  async keyDown(keysym: number): Promise<KeyToken> {
    await this.keyboard.prepare([keysym], this.hooks);
    const k = this.keyboard.lookup(keysym);
    if (!k) throw new AgentError("failed", `no keycode for keysym 0x${keysym.toString(16)}`);
    await this.aim();
    const shift = k.shift ? this.keyboard.lookup(KS.Shift_L) : undefined;
    if (shift) this.key(shift.code, true);
    this.key(k.code, true);
    return { keysym, code: k.code, shift: Boolean(shift) };
  }

  async keyUp(token: KeyToken): Promise<void> {
    if (token.code === undefined) return;
    await this.aim();
    this.key(token.code, false);
    if (token.shift) {
      const shift = this.keyboard.lookup(KS.Shift_L);
      if (shift) this.key(shift.code, false);
    }
  }

  async typeText(text: string, delayMs: number): Promise<void> {
    const units = textUnits(text);
    const shift = () => this.keyboard.lookup(KS.Shift_L);
    let n = 0;
    await this.keyboard.forEachRun(units, this.hooks, async (run) => {
      await this.aim();
      for (const u of run) {
        const k = this.keyboard.lookup(u.sym);
        if (!k) throw new AgentError("failed", `no keycode for keysym 0x${u.sym.toString(16)}`);
        const sh = k.shift ? shift() : undefined;
        if (sh) this.key(sh.code, true);
        this.key(k.code, true);
        this.key(k.code, false);
        if (sh) this.key(sh.code, false);
        if (delayMs > 0) {
          this.delivery.note(await this.sync());
          await sleep(delayMs);
        } else if (++n % 128 === 0) {
          // Bounded bursts: keeps the socket buffer small and the X server's queue moving.
          this.delivery.note(await this.sync());
        }
      }
      // The focus may have moved while typing (a Return that opened a window): both got keys.
      this.delivery.note(await this.sync());
    });
  }

  async settledPointer(): Promise<Point> {
    const deadline = performance.now() + SETTLE_MAX_MS;
    for (let look = 0; ; look++) {
      const [, p] = await Promise.all([this.sync(), queryPointer(this.conn, this.root)]);
      if (this.watch.check(p)) return { x: p.x, y: p.y };
      if (performance.now() > deadline) {
        this.watch.giveUp();
        return { x: p.x, y: p.y };
      }
      if (look > 0) await sleep(Math.min(look, SETTLE_POLL_MAX_MS));
    }
  }

  async sync(): Promise<number> {
    const pressed = this.pressUnsynced;
    const focus = await syncConn(this.conn);
    if (pressed) {
      this.pressUnsynced = false;
      this.pressSyncedAt = performance.now();
    }
    return focus;
  }
}

/** A round trip, answering the focus window; throws the last X error any earlier reply-less request caused. */
export async function syncConn(conn: XConnection): Promise<number> {
  const focus = await getInputFocus(conn);
  if (conn.voidErrors.length > 0) {
    const errs = conn.voidErrors.splice(0);
    throw new AgentError("failed", errs[errs.length - 1].message);
  }
  return focus;
}
