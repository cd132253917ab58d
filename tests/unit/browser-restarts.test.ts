import { describe, expect, it } from "vitest";
import { browserQuitsIn } from "~/models/browser-restarts.server";

// The lines the box's entrypoint prints when a screen's browser quits (images/x11/entrypoint.sh,
// restart_browser), as the server reads them from the box's log into the trace.

const at = (s: string) => Date.parse(`${s}Z`);

describe("browserQuitsIn", () => {
  it("reads restarts, pauses and their end, by display (X11) or screen (Wayland)", () => {
    const lines = [
      "2026-12-07T23:33:57.001 +1.900s holm: chromium launched",
      "2026-12-07T23:34:00.120 +5.010s holm: chromium :100 quit (status 0); starting it again (restart 1 within a minute)",
      "2026-12-07T23:34:01.250 +6.140s holm: chromium 0 quit (status 0); starting it again (restart 2 within a minute)",
      "2026-12-07T23:34:09.500 +14.390s holm: chromium :100 quit (status 0); started again 5 times within a minute already, so again in 51 s",
      "2026-12-07T23:35:00.510 +65.400s holm: screen 1: the pause is over; starting its browser again",
    ];
    expect(browserQuitsIn(lines)).toEqual([
      { at_ms: at("2026-12-07T23:34:00.120"), screen: 1, kind: "restarted", quits_in_minute: 1 },
      { at_ms: at("2026-12-07T23:34:01.250"), screen: 0, kind: "restarted", quits_in_minute: 2 },
      { at_ms: at("2026-12-07T23:34:09.500"), screen: 1, kind: "paused", quits_in_minute: 6, restart_in_s: 51 },
      { at_ms: at("2026-12-07T23:35:00.510"), screen: 1, kind: "resumed" },
    ]);
  });

  it("reads nothing from a crash, which stops the box, nor from a part's quoted last words", () => {
    const lines = [
      "2026-12-07T23:34:00.120 +5.010s holm: chromium :99 exited with status 139; stopping the box",
      "2026-12-07T23:34:00.121 +5.011s holm:   chromium :99: holm: chromium :99 quit (status 0); starting it again (restart 1 within a minute)",
      "chromium :99 quit (status 0); starting it again (restart 1 within a minute)",
      "2026-12-07T23:34:00.122 +5.012s holm: chromium :98 quit (status 0); starting it again (restart 1 within a minute)",
    ];
    expect(browserQuitsIn(lines)).toEqual([]);
  });
});
