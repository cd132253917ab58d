import { describe, expect, it } from "vitest";
import { pausedWaitMs, preferredWaitMs, withPausedWait } from "~/models/paused-wait.server";

// How long a call waits for a paused box: RFC 7240's `Prefer: wait=N` bounds it (the MCP tools
// send it, docs/decisions/0013-mcp.md); without it, ten minutes.

const req = (prefer?: string) => new Request("http://h/v1/boxes/b/screens/0/frame", { headers: prefer ? { prefer } : {} });

describe("Prefer: wait", () => {
  it("reads wait=N seconds, alone or among other preferences; anything else is no preference", () => {
    expect(preferredWaitMs(req("wait=50"))).toBe(50_000);
    expect(preferredWaitMs(req("respond-async, wait=10"))).toBe(10_000);
    expect(preferredWaitMs(req('wait="3"; x'))).toBe(3000);
    for (const v of [undefined, "wait=", "wait=-1", "wait=abc", "nowait=5", "wait=1.5"]) expect(preferredWaitMs(req(v)), v).toBeUndefined();
  });

  it("bounds the wait of the calls it runs, never beyond the default", async () => {
    expect(pausedWaitMs()).toBe(600_000);
    expect(await withPausedWait(3000, async () => (await Promise.resolve(), pausedWaitMs()))).toBe(3000);
    expect(withPausedWait(3_600_000, () => pausedWaitMs())).toBe(600_000);
    expect(withPausedWait(undefined, () => pausedWaitMs())).toBe(600_000);
  });
});
