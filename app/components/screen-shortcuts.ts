// The keyboard shortcuts of a box's screen: take over, and give back.
//
// While a person has control, every key typed with the screen focused belongs to the box, so
// the chords must be ones that the box's programs (Chromium, fluxbox, a terminal) and the
// person's own browser leave alone: Ctrl+Alt+Shift with a letter. No Chromium or Firefox
// shortcut uses all three modifiers, fluxbox binds Alt and Ctrl+Alt with arrows and F-keys, and
// remote desktop clients (Guacamole's menu) pick Ctrl+Alt+Shift for the same reason. The page
// listens on `window` in the capture phase, so it sees the chord before noVNC's listener on the
// canvas does: give back works while the screen has focus, and the chord's letter never reaches
// the box. Matched by `code` (the physical key), because Alt/Option changes `key` (on a Mac,
// Option types a symbol instead of the letter).

export type ShortcutName = "takeOver" | "giveBack";

export const SCREEN_SHORTCUTS: Record<ShortcutName, { code: string; aria: string; label: string }> = {
  takeOver: { code: "KeyT", aria: "Control+Alt+Shift+T", label: "Ctrl+Alt+Shift+T" },
  giveBack: { code: "KeyG", aria: "Control+Alt+Shift+G", label: "Ctrl+Alt+Shift+G" },
};

/** Which screen shortcut a key press is, if any. */
export function matchShortcut(e: KeyboardEvent): ShortcutName | null {
  if (!e.ctrlKey || !e.altKey || !e.shiftKey || e.metaKey || e.repeat) return null;
  if (e.code === SCREEN_SHORTCUTS.takeOver.code) return "takeOver";
  if (e.code === SCREEN_SHORTCUTS.giveBack.code) return "giveBack";
  return null;
}

/**
 * X keysyms of the modifier keys (both hands, and AltGr as noVNC sends it): released in the box
 * before a give back, since noVNC already sent their presses and the control connection closes
 * before the person lets go (x11vnc would leave them held for the agent).
 */
export const MODIFIER_KEYSYMS: [keysym: number, code: string][] = [
  [0xffe1, "ShiftLeft"],
  [0xffe2, "ShiftRight"],
  [0xffe3, "ControlLeft"],
  [0xffe4, "ControlRight"],
  [0xffe9, "AltLeft"],
  [0xffea, "AltRight"],
  [0xfe03, "AltRight"],
];
