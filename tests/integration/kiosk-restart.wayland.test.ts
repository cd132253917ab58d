// The kiosk restart suite (kiosk-restart.test.ts) again, on a Wayland box (issue 18: the same
// suites on both desktops; ADR 0030): a screen's Chromium that quits is started again on its sway
// output the same way, by the same entrypoint code.

// The suite reads the desktop it drives from this global when it loads.
(globalThis as { HOLM_KIOSK_DESKTOP?: string }).HOLM_KIOSK_DESKTOP = "wayland";
await import("./kiosk-restart.test");

export {};
