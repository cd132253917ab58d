// Key names → X keysyms, characters → keysyms, and the checks on key names and typed text.
// Shared by the server, which refuses a batch whose step names a key that does not exist or types
// a character no key makes before anything runs (README: "A malformed step of any kind refuses the
// whole batch"), and the in-box agent, which presses them (images/x11/agent/keysyms.ts). Names
// follow xdotool (X keysym names, case folded) plus the friendlier aliases agents tend to write
// ("ctrl", "enter", "pagedown", "cmd").

/** A key name, chord or text that cannot be typed; the agent answers it `bad_request`. */
export class KeyError extends Error {}

export const KS = {
  BackSpace: 0xff08,
  Tab: 0xff09,
  Return: 0xff0d,
  Escape: 0xff1b,
  Delete: 0xffff,
  Shift_L: 0xffe1,
  Shift_R: 0xffe2,
  Control_L: 0xffe3,
  Control_R: 0xffe4,
  Caps_Lock: 0xffe5,
  Alt_L: 0xffe9,
  Alt_R: 0xffea,
  Super_L: 0xffeb,
  Super_R: 0xffec,
} as const;

/** Key names (lower case) → keysyms. */
export const NAMES: Record<string, number> = {
  backspace: KS.BackSpace, tab: KS.Tab, iso_left_tab: 0xfe20, return: KS.Return, enter: KS.Return,
  linefeed: 0xff0a, escape: KS.Escape, esc: KS.Escape, delete: KS.Delete, del: KS.Delete,
  insert: 0xff63, ins: 0xff63, home: 0xff50, end: 0xff57, left: 0xff51, up: 0xff52, right: 0xff53,
  down: 0xff54, arrowleft: 0xff51, arrowup: 0xff52, arrowright: 0xff53, arrowdown: 0xff54,
  prior: 0xff55, page_up: 0xff55, pageup: 0xff55, pgup: 0xff55, next: 0xff56, page_down: 0xff56,
  pagedown: 0xff56, pgdn: 0xff56, begin: 0xff58, print: 0xff61, printscreen: 0xff61, sys_req: 0xff15,
  pause: 0xff13, break: 0xff6b, scroll_lock: 0xff14, scrolllock: 0xff14, num_lock: 0xff7f,
  numlock: 0xff7f, caps_lock: KS.Caps_Lock, capslock: KS.Caps_Lock, menu: 0xff67,
  contextmenu: 0xff67, help: 0xff6a, find: 0xff68, undo: 0xff65, redo: 0xff66, cancel: 0xff69,
  space: 0x20, spacebar: 0x20,
  shift: KS.Shift_L, shift_l: KS.Shift_L, shift_r: KS.Shift_R, lshift: KS.Shift_L, rshift: KS.Shift_R,
  ctrl: KS.Control_L, control: KS.Control_L, control_l: KS.Control_L, ctrl_l: KS.Control_L,
  control_r: KS.Control_R, ctrl_r: KS.Control_R, lctrl: KS.Control_L, rctrl: KS.Control_R,
  alt: KS.Alt_L, alt_l: KS.Alt_L, alt_r: KS.Alt_R, lalt: KS.Alt_L, ralt: KS.Alt_R, option: KS.Alt_L,
  altgr: 0xfe03, iso_level3_shift: 0xfe03, mode_switch: 0xff7e,
  super: KS.Super_L, super_l: KS.Super_L, super_r: KS.Super_R, win: KS.Super_L, windows: KS.Super_L,
  meta: KS.Super_L, cmd: KS.Super_L, command: KS.Super_L, os: KS.Super_L, hyper_l: 0xffed,
  meta_l: 0xffe7, meta_r: 0xffe8,
  kp_enter: 0xff8d, kp_add: 0xffab, kp_subtract: 0xffad, kp_multiply: 0xffaa, kp_divide: 0xffaf,
  kp_decimal: 0xffae, kp_separator: 0xffac, kp_equal: 0xffbd, kp_home: 0xff95, kp_left: 0xff96,
  kp_up: 0xff97, kp_right: 0xff98, kp_down: 0xff99, kp_page_up: 0xff9a, kp_page_down: 0xff9b,
  kp_end: 0xff9c, kp_begin: 0xff9d, kp_insert: 0xff9e, kp_delete: 0xff9f,
  plus: 0x2b, minus: 0x2d, equal: 0x3d, equals: 0x3d, comma: 0x2c, period: 0x2e, dot: 0x2e,
  slash: 0x2f, backslash: 0x5c, semicolon: 0x3b, colon: 0x3a, apostrophe: 0x27, quote: 0x27,
  quotedbl: 0x22, grave: 0x60, backquote: 0x60, asciitilde: 0x7e, tilde: 0x7e, bracketleft: 0x5b,
  bracketright: 0x5d, braceleft: 0x7b, braceright: 0x7d, parenleft: 0x28, parenright: 0x29,
  less: 0x3c, greater: 0x3e, question: 0x3f, exclam: 0x21, at: 0x40, numbersign: 0x23,
  dollar: 0x24, percent: 0x25, asciicircum: 0x5e, ampersand: 0x26, asterisk: 0x2a,
  underscore: 0x5f, bar: 0x7c,
  xf86audiomute: 0x1008ff12, xf86audiolowervolume: 0x1008ff11, xf86audioraisevolume: 0x1008ff13,
  xf86audioplay: 0x1008ff14, xf86audiostop: 0x1008ff15, xf86audioprev: 0x1008ff16,
  xf86audionext: 0x1008ff17, xf86back: 0x1008ff26, xf86forward: 0x1008ff27, xf86reload: 0x1008ff73,
  xf86search: 0x1008ff1b, xf86homepage: 0x1008ff18, xf86copy: 0x1008ff57, xf86cut: 0x1008ff58,
  xf86paste: 0x1008ff6d,
};
for (let i = 1; i <= 35; i++) NAMES[`f${i}`] = 0xffbe + i - 1;
for (let i = 0; i <= 9; i++) NAMES[`kp_${i}`] = 0xffb0 + i;

export const MODIFIER_KEYSYMS = new Set<number>([
  KS.Shift_L, KS.Shift_R, KS.Control_L, KS.Control_R, KS.Alt_L, KS.Alt_R, KS.Super_L, KS.Super_R,
  0xffe7, 0xffe8, 0xfe03, 0xff7e, 0xffed,
]);

/** Keysym for one Unicode code point, as typed text. */
export function charKeysym(cp: number): number {
  if (cp === 0x0a || cp === 0x0d) return KS.Return;
  if (cp === 0x09) return KS.Tab;
  if (cp === 0x08) return KS.BackSpace;
  if (cp === 0x1b) return KS.Escape;
  if (cp === 0x7f) return KS.Delete;
  if ((cp >= 0x20 && cp <= 0x7e) || (cp >= 0xa0 && cp <= 0xff)) return cp;
  return 0x01000000 + cp;
}

/** Resolves a key name ("ctrl", "Return", "a", "F5", "0xff0d", "U+20AC") to a keysym. */
export function keysymFor(name: string): number {
  const trimmed = name.trim();
  if (trimmed.length === 0) throw new KeyError("empty key name");
  const cps = Array.from(trimmed);
  if (cps.length === 1) {
    const cp = cps[0]!.codePointAt(0) ?? 0;
    // A letter in a chord means the key, not the capital: "ctrl+T" is ctrl+t, as in xdotool.
    if (cp >= 0x41 && cp <= 0x5a) return cp + 0x20;
    return charKeysym(cp);
  }
  const lower = trimmed.toLowerCase();
  const named = NAMES[lower];
  if (named !== undefined) return named;
  if (/^0x[0-9a-f]{1,8}$/.test(lower)) return parseInt(lower.slice(2), 16);
  const u = /^u\+?([0-9a-f]{4,6})$/.exec(lower);
  if (u) return charKeysym(parseInt(u[1]!, 16));
  throw new KeyError(`unknown key name "${trimmed}"`);
}

export interface Chord {
  text: string;
  modifiers: number[];
  key: number | null;
}

/**
 * "ctrl+shift+t" → modifiers [Control_L, Shift_L], key t. "ctrl++" is ctrl and plus, "+" is
 * plus, "U+20AC" one key; "ctrl+" (nothing after the last +) is refused rather than read as
 * ctrl alone.
 */
export function parseChord(chord: string): Chord {
  const text = chord.trim();
  if (!text) throw new KeyError("empty chord");
  const parts: string[] = [];
  let cur = "";
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    const unicodeName = /^u$/i.test(cur.trim()) && /^[0-9a-f]{4,6}(\+|$)/i.test(text.slice(i + 1));
    if (ch === "+" && cur.trim() !== "" && !unicodeName) {
      parts.push(cur.trim());
      cur = "";
    } else {
      cur += ch;
    }
  }
  if (cur.trim() === "") throw new KeyError(`chord "${text}" ends with +: name the key after it ("ctrl+plus" or "ctrl++" for plus)`);
  parts.push(cur.trim());
  const syms = parts.map(keysymFor);
  const last = syms[syms.length - 1]!;
  const mods = syms.slice(0, -1);
  for (let i = 0; i < mods.length; i++) {
    if (!MODIFIER_KEYSYMS.has(mods[i]!)) throw new KeyError(`"${parts[i]}" in chord "${text}" is not a modifier`);
  }
  if (MODIFIER_KEYSYMS.has(last)) return { text, modifiers: [...mods, last], key: null };
  return { text, modifiers: mods, key: last };
}

/** Whether `cp` is a control character no key types (newline, CR, tab, backspace and escape have keys). */
export const untypableControl = (cp: number): boolean => cp < 0x20 && cp !== 0x0a && cp !== 0x0d && cp !== 0x09 && cp !== 0x08 && cp !== 0x1b;

/** Why `text` cannot be typed, or null: the first control character that has no key. */
export function textProblem(text: string): string | null {
  for (const ch of text) {
    const cp = ch.codePointAt(0) ?? 0;
    if (untypableControl(cp)) return `text holds control character U+${cp.toString(16).padStart(4, "0").toUpperCase()}, which has no key`;
  }
  return null;
}

/** Why a key name or chord cannot be pressed, or null. */
export function keyProblem(name: string, parse: (s: string) => unknown): string | null {
  try {
    parse(name);
    return null;
  } catch (e) {
    if (e instanceof KeyError) return e.message;
    throw e;
  }
}
