// The native widgets suite (native-widgets.test.ts) again, on a Wayland box (issue 18: the same
// suites on both desktops; ADR 0028, ADR 0030): a GTK dialog and Chromium as Wayland clients, a
// Qt dialog through XWayland, all on the same accessibility bus.

// The suite reads the desktop it drives from this global when it loads.
(globalThis as { HOLM_WIDGETS_DESKTOP?: string }).HOLM_WIDGETS_DESKTOP = "wayland";
await import("./native-widgets.test");

export {};
