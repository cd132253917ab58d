import { describe, expect, it } from "vitest";
import { describeEntry } from "~/components/trace-describe";
import type { TraceEntry } from "~/models/trace-summary";

// The trace page's and `holm trace`'s one line per entry names who did it, from `by_name`.

const ada = { by: "user:usr_1", by_name: "Ada" };
const bo = { by: "user:usr_2", by_name: "Bo" };
const key = { by: "key:key_1", by_name: "agent-1" };
const server = { by: "server", by_name: "server" };
const token = { by: "server", by_name: "server token" };
let seq = 0;
const entry = (event: string, data: Record<string, unknown> = {}, actor: TraceEntry["actor"] = "person"): TraceEntry => ({ seq: seq++, at_ms: 1, actor, event, screen: 0, data });

describe("describeEntry names who", () => {
  it("takeovers", () => {
    expect(describeEntry(entry("takeover_started", { ...ada, exclusive: true }))).toBe("Ada took over screen 0");
    expect(describeEntry(entry("takeover_started", { ...ada, exclusive: false }))).toBe("Ada took over screen 0 (shared)");
    expect(describeEntry(entry("takeover_started", { ...key, exclusive: true }, "agent"))).toBe("screen 0 handed to a person by key agent-1");
    expect(describeEntry(entry("takeover_ended", { ...ada, held_by: ada.by, why: "given back" }))).toBe("Ada gave screen 0 back");
    expect(describeEntry(entry("takeover_ended", { ...ada, held_by: bo.by, held_by_name: "Bo", why: "given back" }))).toBe("Ada took screen 0 back from Bo");
    expect(describeEntry(entry("takeover_ended", { ...key, held_by: key.by, why: "given back" }, "agent"))).toBe("screen 0 taken back by key agent-1");
    expect(describeEntry(entry("takeover_ended", { ...server, held_by: ada.by, why: "the person's control connection was gone for the grace period" }, "server"))).toBe(
      "screen 0 taken back (the person's control connection was gone for the grace period)",
    );
  });

  it("lifecycle, creation, forks, input", () => {
    expect(describeEntry(entry("gone", { ...key, reason: "removed" }, "agent"))).toBe("removed by key agent-1");
    expect(describeEntry(entry("gone", { ...ada, reason: "removed" }))).toBe("removed by Ada");
    expect(describeEntry(entry("gone", { ...server, reason: "expired" }, "server"))).toBe("removed (expired)");
    expect(describeEntry(entry("paused", ada))).toBe("paused by Ada");
    expect(describeEntry(entry("stopped", token, "agent"))).toBe("stopped by the server token");
    expect(describeEntry(entry("box_created", { ...ada, spec: { desktop: { width: 1280, height: 800 } } }))).toBe("created 1280×800 by Ada");
    expect(describeEntry(entry("forked_from", { ...ada, box: "box_0123456789abcdef0123", up_to: 3 }))).toBe("forked from box_0123456789ab… up to entry 3 by Ada");
    expect(describeEntry(entry("person_input", { ...ada, kind: "click", x: 5, y: 6 }))).toBe("Ada clicked at 5,6");
    expect(describeEntry(entry("terminal", { ...ada, phase: "opened" }))).toBe("terminal opened by Ada");
    expect(describeEntry(entry("browser_restarted", { ...server, quits_in_minute: 1 }, "server"))).toBe("screen 0's browser quit and was restarted");
    expect(describeEntry(entry("browser_paused", { ...server, quits_in_minute: 6, restart_in_s: 42 }, "server"))).toBe(
      "screen 0's browser quit; restarts paused after 6 quits in a minute (again in 42 s)",
    );
    expect(describeEntry(entry("browser_restarted", { ...server, after_pause: true }, "server"))).toBe("screen 0's browser restarted after its pause");
  });

  it("entries recorded before names were read as before", () => {
    expect(describeEntry(entry("takeover_started", { by: "user:usr_1", exclusive: true }))).toBe("screen 0 handed to a person");
    expect(describeEntry(entry("takeover_ended", { by: "user:usr_1", why: "given back" }, "server"))).toBe("screen 0 taken back");
    expect(describeEntry(entry("gone", { reason: "removed", by: "user:usr_1" }))).toBe("removed");
    expect(describeEntry(entry("person_input", { kind: "keys", count: 2, by: "user:usr_1" }))).toBe("a person pressed 2 keys");
  });
});

describe("long descriptions", () => {
  const e = (event: string, data: Record<string, unknown>) => ({ seq: 1, at_ms: 0, actor: "agent" as const, event, data });
  it("cut between words, not inside one", () => {
    const text = describeEntry(e("failed", { why: "the desktop did not answer because the display server stopped while the window manager waited for it to come up again" }));
    expect(text.endsWith("…")).toBe(true);
    const last = text.slice(0, -1).split(" ").at(-1)!;
    expect("the desktop did not answer because the display server stopped while the window manager waited for it to come up again".split(" ")).toContain(last);
  });
  it("say how a fork's replay ended", () => {
    expect(describeEntry(e("replay_ended", { attempted: 6, ok: 6, stopped_at: null }))).toBe("replay ended: 6 of 6 steps ok");
    expect(describeEntry(e("replay_ended", { attempted: 3, ok: 2, stopped_at: 14 }))).toBe("replay ended: 2 of 3 steps ok (stopped at entry 14)");
  });
});
