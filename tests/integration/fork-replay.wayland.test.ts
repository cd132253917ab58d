// The fork-replay suite (fork-replay.test.ts) again, from a Wayland box (issue 18: the same suites
// on both desktops; ADR 0030): the fork takes the source's spec, so it is a Wayland box too, and
// the replayed batches reach its pages the same.

// The suite reads the desktop its source runs from this global when it loads.
(globalThis as { HOLM_FORK_REPLAY_DESKTOP?: string }).HOLM_FORK_REPLAY_DESKTOP = "wayland";
await import("./fork-replay.test");

export {};
