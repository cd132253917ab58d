// Text a Wayland screen's keymap lacks (CJK, emoji, accents), typed with wtype (ADR 0030).
// wtype makes a virtual keyboard whose keymap holds exactly the keysyms it is asked for, on key
// codes given in order of first use: the n-th distinct keysym of a run on evdev code n (Escape,
// 1…9, 0, -, =, Backspace, Tab, q, …). Chromium takes a key's key code from its evdev code
// when the keysym is no Latin letter, so a character there acts as that key (measured in a box,
// one code at a time): on Escape (1) or Backspace (14) nothing is typed ("$(rm -rf /)" arrived
// as "(rm -rf /)", and a CJK text lost a character and the one before it), on Ctrl (29) and Alt
// (56) neither; on Tab, Enter or Shift the character arrives but a page sees that key's `code`.
// So each run first takes those codes with releases of keysyms that type nothing (F20…), and
// characters land only on typing keys' codes (2–53: the main block's digits, letters and
// punctuation): at most 47 distinct keysyms a run; a text with more is typed in several runs.
import { spawn } from "node:child_process";
import { childEnv } from "./proc";
import { AgentError } from "./errors";
import type { TextUnit } from "./keyboard";

/** wtype's keysym numbers (evdev code) up to LAST that must carry no character: Escape, Backspace, Tab, Enter, Ctrl, Shift. */
const NOT_TYPING = new Set([1, 14, 15, 28, 29, 42]);
const LAST_CODE = 53;
/** Distinct keysyms (wtype dedups by keysym) that type nothing, one per code in NOT_TYPING. */
const FILLERS = ["F20", "F21", "F22", "F23", "F24", "F25"];
/** Keys per run at most: bounds one process's argument list. */
const MAX_KEYS = 4000;

/** The argument lists of the wtype runs that type `units` in order, `delayMs` between keys. */
export function wtypeRuns(units: TextUnit[], delayMs: number): string[][] {
  const runs: string[][] = [];
  let args: string[] = [];
  let codes = new Map<number, number>();
  let next = 1;
  let fillers = 0;
  let keys = 0;
  const start = () => {
    if (keys > 0) runs.push(args);
    args = delayMs > 0 ? ["-d", String(delayMs)] : [];
    codes = new Map();
    next = 1;
    fillers = 0;
    keys = 0;
  };
  start();
  for (const u of units) {
    if (!codes.has(u.sym)) {
      if (next > LAST_CODE) start();
      while (NOT_TYPING.has(next)) {
        // A release only: no key goes down, so nothing is typed or pressed.
        args.push("-p", FILLERS[fillers++]);
        next++;
      }
      codes.set(u.sym, next++);
    }
    // A keysym by number: wtype hands it to xkbcommon, which takes "0x…" as the keysym itself.
    args.push("-k", `0x${u.sym.toString(16)}`);
    if (++keys >= MAX_KEYS) start();
  }
  start();
  return runs;
}

/** Types `units` with wtype on `display`, run after run. */
export async function wtypeText(display: string, units: TextUnit[], delayMs: number): Promise<void> {
  for (const args of wtypeRuns(units, delayMs)) await wtype(display, args);
}

function wtype(display: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("wtype", args, { env: childEnv(display), stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err += d.toString()).length > 2000 && (err = err.slice(-2000)));
    child.on("error", (e) => reject(new AgentError("failed", `wtype: ${e.message}`)));
    child.on("close", (code) => (code === 0 ? resolve() : reject(new AgentError("failed", `wtype exited with ${code}: ${err.trim().slice(0, 300)}`))));
  });
}
