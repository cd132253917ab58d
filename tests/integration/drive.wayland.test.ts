import { describe, it } from "vitest";

// The input suite (drive.test.ts) again, on a Wayland box (issue 18: the same suites on both
// desktops; ADR 0030). Not in `npm test` yet: run it with HOLM_TEST_WAYLAND_DRIVE=1. Where it
// stands (2026-12-04): clicks and 1,000 ASCII characters pass; text that goes through wtype (any
// character outside wayvnc's keymap) loses its first character in Chromium ("$(rm -rf /)…" came
// as "(rm -rf /)…"; 53 of 2,000 CJK characters wrong, the first among them), and the suite then
// stalls in the next test's page reload. wayland.test.ts is the Wayland suite `npm test` runs.
if (process.env.HOLM_TEST_WAYLAND_DRIVE === "1") {
  // The suite reads the desktop it drives from this global when it loads.
  (globalThis as { HOLM_DRIVE_DESKTOP?: string }).HOLM_DRIVE_DESKTOP = "wayland";
  await import("./drive.test");
} else {
  describe.skip("drive.test.ts on a Wayland box (HOLM_TEST_WAYLAND_DRIVE=1)", () => {
    it("runs the input suite on Wayland", () => undefined);
  });
}
