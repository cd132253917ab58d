// The takeover suite (takeover.test.ts) again, on a Wayland box (issue 18: the same suites on both
// desktops; ADR 0030): the server refuses the agent the same way whatever the desktop, and what the
// box lets go of (held keys and buttons, running steps) goes through Wayland's input path here.

// The suite reads the desktop it drives from this global when it loads.
(globalThis as { HOLM_TAKEOVER_DESKTOP?: string }).HOLM_TAKEOVER_DESKTOP = "wayland";
await import("./takeover.test");

export {};
