// The keymap as XTEST sees it: keysym → keycode (+ shift), and spare keycodes that are remapped
// to keysyms the layout lacks (emoji, CJK, …), the way xdotool does it — but a remapped keycode
// keeps its keysym until it is needed for another one, so a client that reads its event queue
// late still translates the key with the mapping it was typed with.
import type { XConnection } from "./x11-wire";
import { changeKeyboardMapping, getKeyboardMapping, getModifierMapping } from "./x11-requests";
import { AgentError } from "./errors";
import { charKeysym } from "./keysyms";
import { sleep } from "./util";

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
    if (cp < 0x20 && cp !== 0x0a && cp !== 0x0d && cp !== 0x09 && cp !== 0x08 && cp !== 0x1b) {
      throw new AgentError("bad_request", `text holds control character U+${cp.toString(16).padStart(4, "0")}, which has no key`);
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

/** A remapped keycode is not reused for another keysym until this long after it was last typed. */
const REUSE_AFTER_MS = 250;

export class Keyboard {
  stale = true;
  private symToCode = new Map<number, KeyCode>();
  private spare: number[] = [];
  /** Spare keycodes we remapped, and to what. */
  private readonly assigned = new Map<number, number>();
  private readonly lastTyped = new Map<number, number>();
  /** What the server holds for the keycodes in `assigned`, so a mapping is sent only once. */
  private readonly committed = new Map<number, number>();

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
    const spare: number[] = [];
    const emptyCodes = new Set<number>();
    const remapped = new Map<number, number>();
    for (let i = 0; i < count; i++) {
      const code = minKeycode + i;
      if (modifierCodes.has(code)) continue;
      const cols = Array.from(map.keysyms.subarray(i * per, i * per + per));
      const set = cols.filter((k) => k !== 0);
      const empty = set.length === 0;
      // Only XF86 vendor keys (media, brightness, …): nobody types text with them, and Xvfb's
      // layout leaves only ~15 keycodes empty, too few for CJK text.
      const vendorOnly = !empty && set.every((k) => k >= 0x1008ff00 && k <= 0x1008ffff);
      // [sym, sym] holding a character: how this agent (or a previous one, or xdotool) remaps.
      const ours = !empty && per >= 2 && cols[0] === cols[1] && set.every((k) => k === cols[0]) && isTextKeysym(cols[0]);
      if (empty) emptyCodes.add(code);
      if (empty || vendorOnly || ours) spare.push(code);
      if (ours) remapped.set(code, cols[0]);
    }
    // Empty keycodes first, then the highest: the least likely to be on a real keyboard.
    spare.sort((a, b) => Number(emptyCodes.has(b)) - Number(emptyCodes.has(a)) || b - a);
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
        if (sym && !symToCode.has(sym) && !remapped.has(code)) symToCode.set(sym, { code, shift: col === 1 });
      }
    }
    for (const [code, sym] of remapped) if (!symToCode.has(sym)) symToCode.set(sym, { code, shift: false });
    this.symToCode = symToCode;
    this.spare = spare;
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
      if (foreign.size === this.spare.length) break;
      foreign.add(s);
    }
    return j;
  }

  /**
   * Makes every keysym in `syms` typeable, remapping spare keycodes for those the layout lacks.
   * Returns how long the caller must wait before typing (a keycode typed very recently is about
   * to change meaning); 0 when nothing was remapped or nothing was recent.
   */
  prepare(syms: Iterable<number>): number {
    const foreign: number[] = [];
    for (const s of new Set(syms)) if (!this.isNative(s)) foreign.push(s);
    if (foreign.length > this.spare.length) {
      throw new AgentError("unsupported", `text needs ${foreign.length} keysyms outside the layout at once; ${this.spare.length} spare keycodes`);
    }
    const keep = new Set<number>();
    const missing: number[] = [];
    for (const s of foreign) {
      const k = this.symToCode.get(s);
      if (k) keep.add(k.code);
      else missing.push(s);
    }
    if (missing.length === 0) return 0;
    const free = this.spare.filter((c) => !keep.has(c));
    // Unassigned first, then the least recently typed.
    const order = new Map(this.spare.map((c, i) => [c, i]));
    free.sort((a, b) => {
      const ua = this.assigned.has(a) ? 1 : 0;
      const ub = this.assigned.has(b) ? 1 : 0;
      if (ua !== ub) return ua - ub;
      return (this.lastTyped.get(a) ?? 0) - (this.lastTyped.get(b) ?? 0) || (order.get(a) ?? 0) - (order.get(b) ?? 0);
    });
    let wait = 0;
    const now = Date.now();
    for (let i = 0; i < missing.length; i++) {
      const code = free[i];
      if (this.assigned.has(code)) wait = Math.max(wait, (this.lastTyped.get(code) ?? 0) + REUSE_AFTER_MS - now);
      // Whatever the keycode meant before (a previous remap, or an XF86 key) it no longer does.
      for (const [sym, k] of this.symToCode) if (k.code === code) this.symToCode.delete(sym);
      this.assigned.set(code, missing[i]);
      this.symToCode.set(missing[i], { code, shift: false });
    }
    return wait;
  }

  /** Sends the ChangeKeyboardMapping requests for what `prepare` assigned. */
  commit(syms: Iterable<number>): void {
    for (const s of new Set(syms)) {
      const k = this.symToCode.get(s);
      if (!k || !this.assigned.has(k.code)) continue;
      if (this.committed.get(k.code) === s) continue;
      changeKeyboardMapping(this.conn, k.code, 2, [s, s]);
      this.committed.set(k.code, s);
    }
  }

  /**
   * Types `units` run by run: each run's off-layout keysyms fit in the spare keycodes together,
   * are mapped (after waiting out recent use of the keycodes they take), then `send` types it.
   */
  async forEachRun(units: TextUnit[], sync: () => Promise<void>, send: (run: TextUnit[]) => Promise<void>): Promise<void> {
    if (this.stale) await this.load();
    const syms = units.map((u) => u.sym);
    if (this.spare.length === 0 && syms.some((s) => !this.isNative(s))) {
      throw new AgentError("unsupported", "the keymap has no spare keycode for characters outside the layout");
    }
    let i = 0;
    while (i < units.length) {
      const end = this.runEnd(syms, i);
      const run = units.slice(i, end);
      const runSyms = syms.slice(i, end);
      const wait = this.prepare(runSyms);
      if (wait > 0) {
        await sync();
        await sleep(wait);
      }
      this.commit(runSyms);
      await send(run);
      i = end;
    }
  }

  markTyped(code: number, at: number): void {
    if (this.assigned.has(code)) this.lastTyped.set(code, at);
  }
}
