// The page-batch suite (page-batch.test.ts) again, on a Wayland box (issue 18: the same suites on
// both desktops; ADR 0030): page steps in a batch go through Chromium's DevTools, which Chromium
// serves the same under `--ozone-platform=wayland`; each effect is checked from the page itself.

// The suite reads the desktop its box runs from this global when it loads.
(globalThis as { HOLM_PAGE_BATCH_DESKTOP?: string }).HOLM_PAGE_BATCH_DESKTOP = "wayland";
await import("./page-batch.test");

export {};
