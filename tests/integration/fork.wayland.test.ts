// The fork suite (fork.test.ts) again, from a Wayland box (issue 18: the same suites on both
// desktops; ADR 0030): the fork takes the source's spec, so it is a Wayland box too, and the
// drag recorded there comes out the same when it is replayed through Wayland's input path.

// The suite reads the desktop it drives from this global when it loads.
(globalThis as { HOLM_FORK_DESKTOP?: string }).HOLM_FORK_DESKTOP = "wayland";
await import("./fork.test");

export {};
