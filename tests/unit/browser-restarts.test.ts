import { describe, expect, it } from "vitest";
import { type BrowserQuit, PER_SCREEN_MINUTE, browserQuitsIn, withinRate } from "~/models/browser-restarts.server";

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

describe("withinRate", () => {
  const quit = (at_ms: number, screen = 0): BrowserQuit => ({ at_ms, screen, kind: "restarted", quits_in_minute: 1 });

  it("keeps at most PER_SCREEN_MINUTE lines of a screen in any minute, counting those written before", () => {
    const recent = new Map<number, number[]>([[0, [1000, 2000]]]);
    const lines = [...Array.from({ length: 20 }, (_, i) => quit(10_000 + i)), quit(10_005, 1), quit(70_000)];
    const kept = withinRate(lines, recent);
    const screen0 = kept.filter((q) => q.screen === 0).map((q) => q.at_ms);
    // Two written before, so ten of the twenty; one a minute later is kept again.
    expect(screen0).toEqual([...Array.from({ length: PER_SCREEN_MINUTE - 2 }, (_, i) => 10_000 + i), 70_000]);
    expect(kept.filter((q) => q.screen === 1).map((q) => q.at_ms)).toEqual([10_005]);
    expect(recent.get(0)!.length).toBeLessThanOrEqual(PER_SCREEN_MINUTE);
  });
});
