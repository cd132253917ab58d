// The CDP proxy suite (cdp.test.ts) again, on a Wayland box (issue 18: the same suites on both
// desktops; ADR 0030): Playwright and Puppeteer connect through /v1/cdp to Chromium running under
// `--ozone-platform=wayland`; the token's rules and the takeover's refusal hold the same.

// The suite reads the desktop its box runs from this global when it loads.
(globalThis as { HOLM_CDP_DESKTOP?: string }).HOLM_CDP_DESKTOP = "wayland";
await import("./cdp.test");

export {};
