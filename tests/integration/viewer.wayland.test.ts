// The viewer suite (viewer.test.ts) again, on Wayland boxes (issue 18: the same suites on both
// desktops; ADR 0030): tickets, refusals, view and control mode, pastes in the trace and the
// viewer counts, with the relay reaching wayvnc through the agent's VNC port (VNC authentication
// as with x11vnc). A viewer's cut text lands in the Wayland clipboard there, not a cut buffer.

// The suite reads the desktop its boxes run from this global when it loads.
(globalThis as { HOLM_VIEWER_DESKTOP?: string }).HOLM_VIEWER_DESKTOP = "wayland";
await import("./viewer.test");

export {};
