// Key names → X keysyms, and characters → keysyms: the table and the parsing are the server's too
// (app/protocol/keys.ts), so a batch naming a key that does not exist is refused before anything
// runs. Checked again here (the agent's only caller is the server, but a step is never pressed on
// trust), with the agent's error.
import { AgentError } from "./errors";
import { type Chord, KS, KeyError, MODIFIER_KEYSYMS, NAMES, charKeysym, parseChord as parseShared, keysymFor as keysymShared } from "../../../app/protocol/keys";

export { type Chord, KS, MODIFIER_KEYSYMS, charKeysym };

function asAgentError<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof KeyError) throw new AgentError("bad_request", e.message);
    throw e;
  }
}

/** Resolves a key name ("ctrl", "Return", "a", "F5", "0xff0d", "U+20AC") to a keysym. */
export const keysymFor = (name: string): number => asAgentError(() => keysymShared(name));

/** "ctrl+shift+t" → modifiers [Control_L, Shift_L], key t. "ctrl++" is ctrl and plus. */
export const parseChord = (chord: string): Chord => asAgentError(() => parseShared(chord));

export const HELD_KEYSYM: Record<"shift" | "ctrl" | "alt" | "super", number> = {
  shift: KS.Shift_L,
  ctrl: KS.Control_L,
  alt: KS.Alt_L,
  super: KS.Super_L,
};

/** Canonical name used to report a held key. */
export function keyLabel(name: string): string {
  return name.trim().toLowerCase();
}

/** A readable name for a keysym: the modifier's short name, the character, or hex. */
export function keysymLabel(ks: number): string {
  for (const [name, sym] of Object.entries(HELD_KEYSYM)) if (sym === ks) return name;
  for (const [name, sym] of Object.entries(NAMES)) if (sym === ks) return name;
  if (ks >= 0x20 && ks <= 0x7e) return String.fromCharCode(ks);
  return `0x${ks.toString(16)}`;
}
