// What the X server should show once it has let a press through, and a check of the pointer
// against it.
//
// Why: fluxbox grabs Button1 on every window it manages with GrabModeSync (click to focus and
// raise: fluxbox Window.cc grabButtons), so each left press freezes the pointer and keyboard
// until fluxbox answers it with AllowEvents(ReplayPointer). Events sent meanwhile wait in the X
// server's queue, their motions merged, and QueryPointer still shows the pointer where it was
// pressed. On a loaded machine fluxbox answers late: a drag's long move was planned from that
// stale place, and a second press queued behind the first lost a whole drag (press of one,
// release of the next). With fluxbox stopped 100 ms at a time, 4 drags of 40 were lost.

import type { Point } from "./motion";

/** Buttons 1–3 in a QueryPointer mask (Button1Mask is 1 << 8). */
const BUTTONS_MASK = 0x700;

interface Watch {
  /** Where the press went, when known (the last motion sent before it). */
  at: Point | null;
  /** A motion to somewhere else went out after the press. */
  moved: boolean;
  /** A release went out after the press. */
  released: boolean;
}

export class PressWatch {
  private sentAt: Point | null = null;
  /** Buttons 1–3 as last sent, as a QueryPointer mask. */
  private buttons = 0;
  private watch: Watch | null = null;

  /** True while a press went out that the pointer has not yet been seen past. */
  get pending(): boolean {
    return this.watch !== null;
  }

  moved(x: number, y: number): void {
    this.sentAt = { x, y };
    const w = this.watch;
    if (w?.at && (w.at.x !== x || w.at.y !== y)) w.moved = true;
  }

  button(button: number, down: boolean): void {
    if (button < 1 || button > 3) return; // wheel ticks: press and release at once, no grab of ours to wait for
    const bit = 1 << (7 + button);
    this.buttons = down ? this.buttons | bit : this.buttons & ~bit;
    if (down) this.watch = { at: this.sentAt, moved: false, released: false };
    else if (this.watch) this.watch.released = true;
  }

  /**
   * True when the pointer shows what was sent: the buttons as sent and, after a motion elsewhere,
   * no longer where the press went. A frozen pointer fails one of the two as soon as a release
   * or a motion went out after the press. The place is "not where the press went", not "where
   * the last motion went", so a pointer an application moves on its own (pointer lock) or
   * confines still passes. Clears the watch once the pointer was seen past the press.
   */
  check(p: { x: number; y: number; mask: number }): boolean {
    const w = this.watch;
    if (!w) return true;
    const ok = (p.mask & BUTTONS_MASK) === this.buttons && !(w.moved && w.at && p.x === w.at.x && p.y === w.at.y);
    if (ok && (w.moved || w.released)) this.watch = null;
    return ok;
  }

  /** Gives up waiting: whatever holds the pointer is not letting go. */
  giveUp(): void {
    this.watch = null;
  }
}
