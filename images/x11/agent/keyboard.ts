// The keymap as XTEST sees it: keysym → keycode (+ shift), and spare keycodes that are remapped
// to keysyms the layout lacks (emoji, CJK, …). A remapped keycode keeps its keysym until it is
// needed for another one, and it gets another one only once every client that received a press
// or release of it has handled that event (KeyDelivery): a client that reads its queue late
// still translates each key with the mapping it was typed with (docs/decisions/0008).
import type { XConnection } from "./x11-wire";
import { changeKeyboardMapping, getKeyboardMapping, getModifierMapping } from "./x11-requests";
import { AgentError } from "./errors";
import { charKeysym } from "./keysyms";
import { untypableControl } from "../../../app/protocol/keys";

export interface TextUnit {
  sym: number;
  /** The character as xdotool should get it ("\n" for Return). */
  ch: string;
}

/** Code points of `text` as keysyms; CRLF is one Return; refuses control characters that have no key. */
export function textUnits(text: string): TextUnit[] {
  const out: TextUnit[] = [];
  let prevCr = false;
  for (const ch of text) {
    const cp = ch.codePointAt(0) ?? 0;
    if (cp === 0x0a && prevCr) {
      prevCr = false;
      continue;
    }
    prevCr = cp === 0x0d;
    // The server refuses such text before the batch runs (app/protocol/keys.ts); checked again here.
    if (untypableControl(cp)) {
      throw new AgentError("bad_request", `text holds control character U+${cp.toString(16).padStart(4, "0").toUpperCase()}, which has no key`);
    }
    out.push({ sym: charKeysym(cp), ch: cp === 0x0d ? "\n" : ch });
  }
  return out;
}

export interface KeyCode {
  code: number;
  shift: boolean;
}

/** Characters, not function keys: Latin-1, Latin-2.. legacy sets below 0xfe00, and Unicode keysyms. */
function isTextKeysym(k: number): boolean {
  return (k >= 0x20 && k < 0xfe00) || (k >= 0x01000100 && k <= 0x0110ffff);
}

/**
 * The keycodes that may carry remapped characters, on an evdev keymap (Xvfb's). Chromium takes a
 * key's DOM `code`, and for a keysym it does not know its key code, from the hardware keycode:
 * a character put on the XF86Back key navigates back, on XF86Copy or XF86Paste it copies or
 * pastes instead of typing, on XF86HomePage it opens the new-tab page, on XF86ScrollDown it
 * pages down (each measured). These keys are inert there: no key code, no browser action. The
 * first row is the keycodes the layout leaves empty, the second vendor keys (XF86Launch1-4,
 * XF86Game, …). 197 and 202 (empty) are left out: pages see them as F19 and F24.
 */
const INERT_KEYCODES = new Set([
  8, 93, 97, 103, 120, 132, 149, 154, 168, 178, 183, 184, 217, 219, 222, 230, 248,
  147, 155, 156, 157, 159, 161, 162, 177, 210, 211, 221, 224, 226, 227, 228, 229, 236, 243, 244, 245, 247, 250, 251,
  252, 253, 254, 255,
]);
const XK_a = 0x61;

export interface KeyHooks {
  /** Resolves once every key event sent so far has been handled by the client that got it. */
  confirm(): Promise<void>;
  /**
   * Resolves once the client with the focus has taken in a keymap change just sent (Chromium
   * reloads its keymap in the background and translates keys with the old one until then).
   */
  remapped(): Promise<void>;
}

interface Plan {
  assign: Array<[code: number, sym: number]>;
  /** A keycode in `assign` was pressed or released since the last confirmation. */
  confirm: boolean;
}

export class Keyboard {
  stale = true;
  private symToCode = new Map<number, KeyCode>();
  private spare: number[] = [];
  /**
   * The server's keymap as we last set or read it, and the keycodes whose keysyms may be sent
   * again unchanged: one ChangeKeyboardMapping can then span several spare keycodes and the
   * vendor or empty keys between them, so clients see one MappingNotify per run of text
   * instead of one per keycode (xterm refetches the whole keymap for each).
   */
  private mirror: { min: number; per: number; syms: Uint32Array } | null = null;
  private readonly fillable = new Set<number>();
  /** Spare keycodes we remapped, and to what. */
  private readonly assigned = new Map<number, number>();
  /** What the server holds for the keycodes in `assigned`, so a mapping is sent only once. */
  private readonly committed = new Map<number, number>();
  /** Key events on remapped keycodes, numbered; those up to `confirmedUpTo` are known handled. */
  private events = 0;
  private confirmedUpTo = 0;
  private readonly lastEvent = new Map<number, number>();
  /** Remapped keycodes held down now: never remapped until released. */
  private readonly down = new Set<number>();

  constructor(private readonly conn: XConnection) {}

  get spareCount(): number {
    return this.spare.length;
  }

  async load(): Promise<void> {
    const { minKeycode, maxKeycode } = this.conn.setup;
    const [map, mods] = await Promise.all([getKeyboardMapping(this.conn, minKeycode, maxKeycode - minKeycode + 1), getModifierMapping(this.conn)]);
    const per = map.perKeycode;
    const modifierCodes = new Set(mods.flat());
    const count = maxKeycode - minKeycode + 1;
    // An evdev keymap puts "a" on keycode 38; elsewhere the keys' meaning is unknown, so only
    // empty keycodes are taken.
    const evdev = 38 >= minKeycode && 38 <= maxKeycode && map.keysyms[(38 - minKeycode) * per] === XK_a;
    const spare: number[] = [];
    const remapped = new Map<number, number>();
    /** Remapped by someone onto a key that is not inert: never typed with. */
    const shunned = new Set<number>();
    this.fillable.clear();
    for (let i = 0; i < count; i++) {
      const code = minKeycode + i;
      if (modifierCodes.has(code)) continue;
      const cols = Array.from(map.keysyms.subarray(i * per, i * per + per));
      const set = cols.filter((k) => k !== 0);
      const empty = set.length === 0;
      if (empty || set.every((k) => k >= 0x1008ff00 && k <= 0x1008ffff)) this.fillable.add(code);
      // [sym, sym] holding a character: how this agent (or a previous one, or xdotool) remaps.
      const ours = !empty && per >= 2 && cols[0] === cols[1] && set.every((k) => k === cols[0]) && isTextKeysym(cols[0]);
      if (evdev ? !INERT_KEYCODES.has(code) : !empty && !ours) {
        if (ours) shunned.add(code);
        continue;
      }
      // A vendor key that still has its own keysym stays spare too: nobody types with it.
      if (empty || ours || set.every((k) => k >= 0x1008ff00 && k <= 0x1008ffff)) spare.push(code);
      if (ours) remapped.set(code, cols[0]);
    }
    // Trust the server over our memory: a keycode someone else changed is no longer ours.
    this.assigned.clear();
    this.committed.clear();
    for (const [code, sym] of remapped) {
      this.assigned.set(code, sym);
      this.committed.set(code, sym);
    }
    const symToCode = new Map<number, KeyCode>();
    for (let col = 0; col < 2 && col < per; col++) {
      for (let i = 0; i < count; i++) {
        const sym = map.keysyms[i * per + col];
        const code = minKeycode + i;
        if (sym && !symToCode.has(sym) && !remapped.has(code) && !shunned.has(code)) symToCode.set(sym, { code, shift: col === 1 });
      }
    }
    for (const [code, sym] of remapped) if (!symToCode.has(sym)) symToCode.set(sym, { code, shift: false });
    this.symToCode = symToCode;
    this.spare = spare;
    this.mirror = { min: minKeycode, per, syms: Uint32Array.from(map.keysyms) };
    this.stale = false;
  }

  /** The layout's own keycode for `sym`, or a remapped one already holding it. */
  lookup(sym: number): KeyCode | undefined {
    return this.symToCode.get(sym);
  }

  private isNative(sym: number): boolean {
    const k = this.symToCode.get(sym);
    return k !== undefined && !this.assigned.has(k.code);
  }

  /** Spare keycodes free for this run: those held down keep their keysym. */
  private get capacity(): number {
    return this.spare.length - this.down.size;
  }

  /**
   * Splits `syms` into runs whose non-native keysyms fit in the spare keycodes together.
   * Returns the end index (exclusive) of the run starting at `start`.
   */
  runEnd(syms: number[], start: number): number {
    const foreign = new Set<number>();
    let j = start;
    for (; j < syms.length; j++) {
      const s = syms[j];
      if (this.isNative(s) || foreign.has(s)) continue;
      if (foreign.size >= this.capacity) break;
      foreign.add(s);
    }
    return j;
  }

  private unconfirmed(code: number): boolean {
    return (this.lastEvent.get(code) ?? 0) > this.confirmedUpTo;
  }

  /** Which spare keycodes the keysyms of `syms` that have none would take; changes nothing. */
  private plan(syms: Iterable<number>): Plan {
    const foreign: number[] = [];
    for (const s of new Set(syms)) if (!this.isNative(s)) foreign.push(s);
    const keep = new Set<number>();
    const missing: number[] = [];
    for (const s of foreign) {
      const k = this.symToCode.get(s);
      if (k) keep.add(k.code);
      else missing.push(s);
    }
    if (missing.length === 0) return { assign: [], confirm: false };
    const free = this.spare.filter((c) => !keep.has(c) && !this.down.has(c));
    if (missing.length > free.length) {
      throw new AgentError("unsupported", `text needs ${foreign.length} keysyms outside the layout at once; ${this.capacity} spare keycodes are free`);
    }
    // Never used first, then those whose last key event is known handled, then the least recent.
    const order = new Map(this.spare.map((c, i) => [c, i]));
    const rank = (c: number) => (!this.assigned.has(c) ? 0 : this.unconfirmed(c) ? 2 : 1);
    free.sort((a, b) => rank(a) - rank(b) || (this.lastEvent.get(a) ?? 0) - (this.lastEvent.get(b) ?? 0) || (order.get(a) ?? 0) - (order.get(b) ?? 0));
    const assign = missing.map((sym, i): [number, number] => [free[i], sym]);
    return { assign, confirm: assign.some(([code]) => this.assigned.has(code) && this.unconfirmed(code)) };
  }

  /**
   * Takes the keycodes of `plan` and sends the new mappings, as few requests as the keymap
   * allows; true when a mapping was sent.
   */
  private apply(plan: Plan): boolean {
    for (const [code, sym] of plan.assign) {
      // Whatever the keycode meant before (a previous remap, or an XF86 key) it no longer does.
      for (const [s, k] of this.symToCode) if (k.code === code) this.symToCode.delete(s);
      this.assigned.set(code, sym);
      this.symToCode.set(sym, { code, shift: false });
    }
    const changed = plan.assign.filter(([code, sym]) => this.committed.get(code) !== sym).sort((a, b) => a[0] - b[0]);
    if (changed.length === 0) return false;
    const m = this.mirror!;
    for (const [code, sym] of changed) {
      const at = (code - m.min) * m.per;
      m.syms.fill(0, at, at + m.per);
      m.syms[at] = sym;
      if (m.per > 1) m.syms[at + 1] = sym;
      this.committed.set(code, sym);
    }
    // One request per span of keycodes whose in-between keys may be rewritten as they are.
    const canSpan = (from: number, to: number) => {
      for (let c = from + 1; c < to; c++) if (!this.fillable.has(c) && !this.assigned.has(c)) return false;
      return true;
    };
    for (let i = 0; i < changed.length; ) {
      let j = i + 1;
      while (j < changed.length && canSpan(changed[j - 1][0], changed[j][0])) j++;
      const lo = changed[i][0];
      const hi = changed[j - 1][0];
      const syms = Array.from(m.syms.subarray((lo - m.min) * m.per, (hi - m.min + 1) * m.per));
      changeKeyboardMapping(this.conn, lo, m.per, syms);
      i = j;
    }
    return true;
  }

  /**
   * Makes every keysym in `syms` typeable, remapping spare keycodes for those the layout lacks.
   * A keycode whose last press or release may not have been handled yet is remapped only after
   * `hooks.confirm` says it has been; after a remap, `hooks.remapped` waits for the focused client
   * to have taken the new keymap in.
   */
  async prepare(syms: Iterable<number>, hooks: KeyHooks): Promise<void> {
    if (this.stale) await this.load();
    const plan = this.plan(syms);
    if (plan.confirm) {
      const upTo = this.events;
      await hooks.confirm();
      this.confirmedUpTo = Math.max(this.confirmedUpTo, upTo);
    }
    // Keys typed on a keycode just remapped must not reach a client still holding the old map.
    if (this.apply(plan)) await hooks.remapped();
  }

  /**
   * Types `units` run by run: each run's off-layout keysyms fit in the spare keycodes together,
   * are mapped (after the clients have handled earlier uses of the keycodes they take), then
   * `send` types it.
   */
  async forEachRun(units: TextUnit[], hooks: KeyHooks, send: (run: TextUnit[]) => Promise<void>): Promise<void> {
    if (this.stale) await this.load();
    const syms = units.map((u) => u.sym);
    if (this.capacity <= 0 && syms.some((s) => !this.isNative(s))) {
      throw new AgentError("unsupported", "the keymap has no spare keycode for characters outside the layout");
    }
    let i = 0;
    while (i < units.length) {
      const end = this.runEnd(syms, i);
      const run = units.slice(i, end);
      await this.prepare(syms.slice(i, end), hooks);
      await send(run);
      i = end;
    }
  }

  /** A press (`down`) or release of `code` was sent. */
  keyEvent(code: number, down: boolean): void {
    if (!this.assigned.has(code)) return;
    this.lastEvent.set(code, ++this.events);
    if (down) this.down.add(code);
    else this.down.delete(code);
  }
}
