// The input suite (drive.test.ts) again, on a Wayland box (issue 18: the same suites on both
// desktops; ADR 0030). Where Wayland differs, drive.test.ts says so by DESKTOP: Chromium there
// makes one wheel notch 1.5 of X11's. (Emoji beyond U+FFFF go in as two keys each there, and the
// suite expects the same text on both.) The name puts this file in the other half of `--shard` from
// drive.test.ts (vitest splits by a hash of the path), so the two do not lengthen one half.

// The suite reads the desktop it drives from this global when it loads.
(globalThis as { HOLM_DRIVE_DESKTOP?: string }).HOLM_DRIVE_DESKTOP = "wayland";
await import("./drive.test");

export {};
