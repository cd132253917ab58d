// The trace suite (trace.test.ts) again, on Wayland boxes (issue 18: the same suites on both
// desktops; ADR 0030): the acted entries and frames a batch records (frames from wayvnc there,
// with the pointer drawn in), reading after removal, surviving a kill -9, and forks that replay
// the form-filling run through Wayland's input and reproduce its final screen.

// The suite reads the desktop its boxes run from this global when it loads.
(globalThis as { HOLM_TRACE_DESKTOP?: string }).HOLM_TRACE_DESKTOP = "wayland";
await import("./trace.test");

export {};
