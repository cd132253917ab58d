// The recordings suite (recordings.test.ts) again, on Wayland boxes (issue 18: the same suites on
// both desktops; ADR 0030): there ffmpeg reads the frames the agent takes from wayvnc on its stdin
// instead of grabbing the X display, and the trace marks, the kept MP4 (H.264, the screen's size,
// as long as the recording), a removal while recording and pruning must come out the same.

// The suite reads the desktop it records from this global when it loads.
(globalThis as { HOLM_RECORDINGS_DESKTOP?: string }).HOLM_RECORDINGS_DESKTOP = "wayland";
await import("./recordings.test");

export {};
