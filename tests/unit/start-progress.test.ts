import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { StartProgress, seconds, startElapsed, startFraction, startWords } from "~/components/start-progress";
import type { BoxStart } from "~/protocol/box-console";

// The compact start view a list drops into each row: its words, time and bar for each kind of
// start, and that 80 of them render in a few milliseconds.

const T = 1_700_000_000_000;
const queued: BoxStart = { phase: "queued", phases: [{ name: "queued", at_ms: T }], log: [] };
const building: BoxStart = {
  phase: "image",
  phases: [
    { name: "queued", at_ms: T },
    { name: "image", at_ms: T + 10 },
  ],
  build: { step: 4, total: 10, line: "Get:4 http://deb.debian.org/debian bookworm/main amd64 Packages" },
  log: ["Step 4/10 : RUN apt-get -q update"],
};
const failed: BoxStart = { ...building, phase: "failed", failed_in: "image", ended_ms: T + 6_500, build: undefined };
const ready: BoxStart = {
  phase: "ready",
  phases: ["queued", "image", "container", "x", "vnc", "browser", "agent"].map((name, i) => ({ name: name as "queued", at_ms: T + i * 200 })),
  log: [],
  ended_ms: T + 1_234,
};

describe("StartProgress", () => {
  it("says the phase in words", () => {
    expect(startWords(queued)).toBe("Waiting for a start slot");
    expect(startWords(building)).toBe("Building the image (step 4 of 10)");
    expect(startWords({ ...building, build: { step: 0, total: 0, line: "building holm-x11:…" } })).toBe("Building the image");
    expect(startWords({ ...building, build: undefined })).toBe("Finding the image");
    expect(startWords(failed)).toBe("Failed while building the image");
    expect(startWords(ready)).toBe("Ready");
    expect(startWords(undefined)).toBe("Starting");
  });

  it("times the start until now, or until it ended", () => {
    expect(seconds(startElapsed(queued, 0, T + 4_260))).toBe("4.2 s");
    expect(seconds(startElapsed(failed, 0, T + 99_000))).toBe("6.5 s");
    expect(seconds(startElapsed(ready, 0, T + 99_000))).toBe("1.2 s");
    expect(seconds(125_000)).toBe("2 min 05 s");
    // A box recorded before starts were: its creation.
    expect(seconds(startElapsed(undefined, T, T + 3_000))).toBe("3.0 s");
  });

  it("fills its bar as the phases and build steps go by", () => {
    const f = [queued, { ...building, build: { step: 1, total: 10, line: "" } }, building, ready].map(startFraction);
    expect(f).toEqual([...f].sort((a, b) => a - b));
    expect(f[0]).toBeGreaterThan(0);
    expect(f.at(-1)).toBe(1);
  });

  it("renders a failed start in red with its words, and 80 rows each with its own bar", () => {
    const html = renderToStaticMarkup(createElement(StartProgress, { start: failed, createdAt: T, now: T + 9_000 }));
    expect(html).toContain("Failed while building the image");
    expect(html).toContain("6.5 s");
    expect(html).toContain("bg-red-500");
    expect(html).toContain('aria-label="Start failed"');
    // How fast 80 rows render is the box-list bench's business (npm run bench box-list), not a
    // timed test's: here, that each of the 80 rows gets its own progress bar.
    const rows = Array.from({ length: 80 }, (_, i) => createElement(StartProgress, { key: i, start: i % 2 ? building : queued, createdAt: T, now: T + i * 100 }));
    const list = renderToStaticMarkup(createElement("div", null, rows));
    expect(list.match(/role="progressbar"/g)?.length).toBe(80);
  });
});

describe("the box page's live box (use-live-box)", () => {
  it("keeps a pushed start's progress over an older loader read, within one state", async () => {
    const { laterStart } = await import("~/components/use-live-box");
    const box = (start: BoxStart, state = "starting") => ({ id: "box_1", state, start }) as never;
    const step = (n: number): BoxStart => ({ ...building, build: { step: n, total: 10, line: `step ${n}` } });
    // The loader read "step 1" after the socket pushed "step 4": step 4 stays.
    expect((laterStart(box(step(4)), box(step(1))) as { start: BoxStart }).start.build?.step).toBe(4);
    // Newer from the loader: taken.
    expect((laterStart(box(step(1)), box(step(4))) as { start: BoxStart }).start.build?.step).toBe(4);
    // Fewer phases is older too.
    expect((laterStart(box(building), box(queued)) as { start: BoxStart }).start).toBe(building);
    // Another state (a restart starts over): the loader's.
    expect((laterStart(box(step(4), "ready"), box(queued)) as { start: BoxStart }).start).toBe(queued);
  });
});
