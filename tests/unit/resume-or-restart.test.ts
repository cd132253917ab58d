import { describe, expect, it } from "vitest";
import { resumeOrRestart, resumeUntilRunning } from "../../app/runtime/freeze-gate.server";

// The engine's "cannot resume a running process" (its record paused, containerd's task running)
// was seen once in a CI run and could not be brought about again here, so the branch is checked
// against a stand-in container that answers as the engine did: a restart, in order, and nothing
// else mistaken for it.

function container(unpauseError?: string) {
  const calls: string[] = [];
  return {
    calls,
    id: "c1",
    async unpause() {
      calls.push("unpause");
      if (unpauseError) throw new Error(unpauseError);
    },
    async kill() {
      calls.push("kill");
    },
    async wait(opts: { condition: string }) {
      calls.push(`wait ${opts.condition}`);
    },
    async start() {
      calls.push("start");
    },
  };
}

describe("resumeOrRestart", () => {
  it("resumes a paused container", async () => {
    const c = container();
    expect(await resumeOrRestart(c)).toBe("resumed");
    expect(c.calls).toEqual(["unpause"]);
  });

  it("restarts one the engine cannot resume because containerd has it running", async () => {
    const c = container("(HTTP code 500) server error - Cannot unpause container c1: cannot resume a running process: unknown");
    expect(await resumeOrRestart(c)).toBe("restarted");
    expect(c.calls).toEqual(["unpause", "kill", "wait not-running", "start"]);
  });

  it("takes a container another resume got to first (not paused) as resumed, restarting nothing", async () => {
    const c = container("(HTTP code 409) unexpected - Container c1 is not paused");
    expect(await resumeOrRestart(c)).toBe("resumed");
    expect(c.calls).toEqual(["unpause"]);
  });

  it("passes any other failure on, restarting nothing", async () => {
    const c = container("(HTTP code 404) no such container - No such container: c1");
    await expect(resumeOrRestart(c)).rejects.toThrow(/no such container/);
    expect(c.calls).toEqual(["unpause"]);
  });
});

describe("resumeUntilRunning", () => {
  /** A container whose engine still says paused for the first `stale` looks after an unpause. */
  function lagging(stale: number) {
    const c = container();
    let looks = 0;
    return Object.assign(c, {
      async inspect() {
        c.calls.push("inspect");
        return { State: { Paused: looks++ < stale } };
      },
    });
  }

  it("resumes once when the engine says running at once", async () => {
    const c = lagging(0);
    expect(await resumeUntilRunning(c, 3)).toBe("resumed");
    expect(c.calls).toEqual(["unpause", "inspect"]);
  });

  it("resumes again while the engine still says paused, then answers", async () => {
    const c = lagging(2);
    expect(await resumeUntilRunning(c, 3)).toBe("resumed");
    expect(c.calls).toEqual(["unpause", "inspect", "unpause", "inspect", "unpause", "inspect"]);
  });

  it("gives up with a retryable `unavailable` when it stays paused", async () => {
    const c = lagging(99);
    await expect(resumeUntilRunning(c, 2)).rejects.toMatchObject({ code: "unavailable", retryable: true });
    expect(c.calls.filter((x) => x === "unpause")).toHaveLength(3);
  });
});
