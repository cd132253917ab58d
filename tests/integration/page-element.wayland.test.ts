// The element suite (page-element.test.ts) again, on a Wayland box (issue 18: the same suites on
// both desktops; ADR 0030): snapshots, find and every element operation go through Chromium's
// DevTools, which Chromium serves the same under `--ozone-platform=wayland`; each effect is still
// checked from the page itself.

// The suite reads the desktop its box runs from this global when it loads.
(globalThis as { HOLM_PAGE_ELEMENT_DESKTOP?: string }).HOLM_PAGE_ELEMENT_DESKTOP = "wayland";
await import("./page-element.test");

export {};
