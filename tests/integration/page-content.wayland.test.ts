// The page-content suite (page-content.test.ts) again, on a Wayland box with two screens (issue
// 18: the same suites on both desktops; ADR 0030): text, markdown, console, network and tabs read
// through Chromium's DevTools under `--ozone-platform=wayland`, per screen.

// The suite reads the desktop its box runs from this global when it loads.
(globalThis as { HOLM_PAGE_CONTENT_DESKTOP?: string }).HOLM_PAGE_CONTENT_DESKTOP = "wayland";
await import("./page-content.test");

export {};
