import type { StartPhase } from "~/protocol/box-console";
import type { BoxExit } from "~/runtime/runtime";

// Why a box's container ended, in the server's own words. Those come from the engine alone (the
// container's exit status, which its entrypoint sets by what ended it, and whether the kernel
// killed something in it for memory): any process in the box, even as root, can print anything
// onto the container's output, so that output is only ever quoted, marked as the box's, cut short
// and stripped of control characters, and only a failure line of it (images/README.md).

/** The entrypoint's exit statuses (images/x11/entrypoint.sh): the part that ended, and its start phase. */
const PARTS: Record<number, { words: string; phase?: StartPhase }> = {
  10: { words: "its display server exited", phase: "x" },
  11: { words: "its window manager exited", phase: "x" },
  12: { words: "its VNC server exited", phase: "vnc" },
  13: { words: "Chromium exited", phase: "browser" },
  14: { words: "its agent exited", phase: "agent" },
  15: { words: "one of its parts exited" },
};

/** How long a quoted line of the box's may be. */
const QUOTE_MAX = 160;

/** Why the container ended, from the engine's report; undefined when the engine gave none. */
export function exitWords(exit: BoxExit | undefined): string | undefined {
  if (!exit) return undefined;
  const { code } = exit;
  let words: string;
  if (PARTS[code]) words = PARTS[code].words;
  else if (code === 0) words = "it was told to stop (TERM)";
  else if (code === 1) words = "its start-up script gave up";
  else if (code === 137) words = "its container was killed (exit status 137)";
  else if (code > 128 && code < 160) words = `its container was ended by signal ${code - 128} (exit status ${code})`;
  else words = `its container exited with status ${code}`;
  // The engine's flag stays set once the kernel killed anything in the box for memory (a renderer,
  // hours ago): a box the server told to stop did not end of it.
  return exit.oom_killed && code !== 0 ? `it ran out of memory (the kernel killed a process in it); ${words}` : words;
}

/** The start phase of the part whose end ended the box, when its exit status names one. */
export function exitPhase(exit: BoxExit | undefined): StartPhase | undefined {
  return exit ? PARTS[exit.code]?.phase : undefined;
}

/**
 * The box's last failure line (its entrypoint's "fatal: …" or "… exited with status N …", never
 * a progress line), quoted as the box's: `the box's output says: "…"`; undefined when it printed none.
 */
export function boxSays(lines: string[]): string | undefined {
  for (let i = lines.length - 1; i >= 0; i--) {
    const said = / holm: (fatal: .*|\S.* exited with status \d+.*)$/.exec(lines[i]!)?.[1];
    if (!said) continue;
    const clean = said.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]+/gu, " ").replace(/"/g, "'").trim();
    return `the box's output says: "${clean.length > QUOTE_MAX ? `${clean.slice(0, QUOTE_MAX - 1)}…` : clean}"`;
  }
  return undefined;
}

/** Why the box ended: the engine's words, then the box's own failure line quoted. */
export function endedBecause(exit: BoxExit | undefined, lines: string[], fallback: string): string {
  return [exitWords(exit) ?? fallback, boxSays(lines)].filter(Boolean).join("; ");
}
