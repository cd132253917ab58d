// The input suite (drive.test.ts) again, on a Wayland box (issue 18: the same suites on both
// desktops; ADR 0030). Where Wayland differs, drive.test.ts says so by DESKTOP: Chromium there
// inserts no typed character beyond U+FFFF (the type step refuses it, `unsupported`), and makes
// one wheel notch 1.5 of X11's. The name puts this file in the other half of `--shard` from
// drive.test.ts (vitest splits by a hash of the path), so the two do not lengthen one half.

// The suite reads the desktop it drives from this global when it loads.
(globalThis as { HOLM_DRIVE_DESKTOP?: string }).HOLM_DRIVE_DESKTOP = "wayland";
await import("./drive.test");

export {};
