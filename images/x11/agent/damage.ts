// Knowing that the screen did not change without reading it. A frame is 4 MB of pixels fetched
// from the X server and compared; the X DAMAGE extension instead tells this connection when
// anything is drawn on the root window or any window in it (every client's drawing, window maps,
// moves and unmaps), so a capture whose last pixels are still current needs one round trip, not
// a 4 MB read.
//
// Ordering is what makes it exact. Before each capture the damage is emptied (DamageSubtract)
// and `dirty` cleared, in that order on the wire ahead of the GetImage: whatever is drawn after
// the subtract is reported by a new DamageNotify. A notify for drawing from before the subtract
// may still arrive after `dirty` was cleared; it sets `dirty` again, which only costs one capture.
// Before answering "unchanged", a round trip brings in every notify the server sent before it.
import type { XConnection } from "./x11-wire";
import { DAMAGE_REPORT_NON_EMPTY, damageCreate, damageQueryVersion, damageSubtractAll, getInputFocus, type Extension } from "./x11-requests";

export class DamageWatch {
  /** Drawn since the last `arm()`; true until a first capture. */
  private dirty = true;

  private constructor(
    private readonly conn: XConnection,
    private readonly major: number,
    private readonly notifyCode: number,
    private readonly damage: number,
  ) {}

  static async open(conn: XConnection, ext: Extension, root: number): Promise<DamageWatch> {
    await damageQueryVersion(conn, ext.major);
    const damage = conn.allocId();
    damageCreate(conn, ext.major, damage, root, DAMAGE_REPORT_NON_EMPTY);
    return new DamageWatch(conn, ext.major, ext.firstEvent, damage);
  }

  /** True when `ev` was this watch's DamageNotify (consumed). */
  onEvent(ev: Buffer): boolean {
    if ((ev[0] & 0x7f) !== this.notifyCode) return false;
    this.dirty = true;
    return true;
  }

  /** Call right before reading pixels: drawing from now on marks the screen changed. */
  arm(): void {
    damageSubtractAll(this.conn, this.major, this.damage);
    this.dirty = false;
  }

  /** The read that followed `arm()` failed: the last pixels read are not known current. */
  spoil(): void {
    this.dirty = true;
  }

  /** Whether nothing was drawn since the last `arm()`, as of a round trip made now. */
  async unchangedSinceArm(): Promise<boolean> {
    if (this.dirty) return false;
    await getInputFocus(this.conn);
    return !this.dirty;
  }
}
