// An independent X client for tests: a full-screen override-redirect window that records every
// key, button and motion event the X server delivers to it. What it saw is what an app would see.
import { XConnection, Req } from "../../images/x11/agent/x11-wire";
import { getInputFocus, getKeyboardMapping } from "../../images/x11/agent/x11-requests";

export interface XEvent {
  type: "key_press" | "key_release" | "button_press" | "button_release" | "motion";
  detail: number;
  x: number;
  y: number;
  state: number;
  time: number;
}

const NAMES: Record<number, XEvent["type"]> = { 2: "key_press", 3: "key_release", 4: "button_press", 5: "button_release", 6: "motion" };
export const STATE_SHIFT = 1;
export const STATE_CONTROL = 4;
export const STATE_MOD1 = 8;
export const STATE_BUTTON1 = 0x100;

export class Probe {
  events: XEvent[] = [];
  private constructor(
    readonly conn: XConnection,
    readonly window: number,
  ) {}

  static async open(display: number, width = 1280, height = 800): Promise<Probe> {
    const conn = await XConnection.connect(display);
    const wid = conn.allocId();
    // CreateWindow: back pixel, override-redirect, event mask (values in bit order).
    const mask = 0x2 | 0x200 | 0x800;
    const events = 0x1 | 0x2 | 0x4 | 0x8 | 0x40;
    conn.send(
      new Req(1, 0).u32(wid).u32(conn.setup.root).i16(0).i16(0).u16(width).u16(height).u16(0).u16(1).u32(0)
        .u32(mask).u32(0x336699).u32(1).u32(events).finish(),
    );
    conn.send(new Req(8).u32(wid).finish()); // MapWindow
    const probe = new Probe(conn, wid);
    conn.onEvent = (ev) => {
      const type = NAMES[ev[0] & 0x7f];
      if (!type) return;
      probe.events.push({ type, detail: ev[1], time: ev.readUInt32LE(4), x: ev.readInt16LE(24), y: ev.readInt16LE(26), state: ev.readUInt16LE(28) });
    };
    await getInputFocus(conn);
    await probe.focus();
    return probe;
  }

  async focus(): Promise<void> {
    this.conn.send(new Req(12).u32(this.window).u16(64).pad(2).u32(0).finish()); // raise
    this.conn.send(new Req(42, 2).u32(this.window).u32(0).finish()); // SetInputFocus
    await getInputFocus(this.conn);
  }

  /** Waits for the server to deliver everything pending, then returns and clears the events. */
  async take(settleMs = 30): Promise<XEvent[]> {
    await new Promise((r) => setTimeout(r, settleMs));
    await getInputFocus(this.conn);
    const out = this.events;
    this.events = [];
    return out;
  }

  async keysymOf(keycode: number): Promise<number> {
    const m = await getKeyboardMapping(this.conn, keycode, 1);
    return m.keysyms[0];
  }

  close(): void {
    this.conn.close();
  }
}
