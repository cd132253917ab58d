import { PassThrough } from "node:stream";
import type Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { openTunnel } from "~/runtime/exec-tunnel.server";

// A tunnel to a box on another engine (ADR 0019) is a hijacked `docker exec` stream. An engine
// cut off while the tunnel waits for its forwarder to start times that stream out (ETIMEDOUT):
// the error must reach the tunnel (dead, not alive) and never go unheard, which ends the whole
// server (a CI run of swarm.test cut a node off at that moment). The engine here is a stand-in at
// dockerode's seam, since the timing cannot be had from a real one on demand.

function engineThatTimesOut() {
  const socket = new PassThrough();
  let inspected = 0;
  const exec = {
    start: async () => socket,
    // The first look at the exec is where the engine goes away: the socket errors meanwhile.
    inspect: async () => {
      if (inspected++ === 0) {
        socket.destroy(Object.assign(new Error("read ETIMEDOUT"), { code: "ETIMEDOUT" }));
        await new Promise((r) => setTimeout(r, 20));
        throw new Error("the engine does not answer");
      }
      return { Pid: 0, ExitCode: null };
    },
  };
  const docker = {
    getContainer: () => ({ exec: async () => exec }),
    modem: { demuxStream: (from: PassThrough, to: PassThrough) => from.pipe(to) },
  };
  return docker as unknown as Docker;
}

describe("an exec tunnel", () => {
  it("hears its stream time out while its forwarder starts: the tunnel is dead, the process goes on", async () => {
    const unheard: unknown[] = [];
    const note = (err: unknown) => unheard.push(err);
    process.on("uncaughtException", note);
    try {
      const tunnel = await openTunnel(engineThatTimesOut(), "box", 8080);
      await new Promise((r) => setTimeout(r, 20));
      expect(tunnel.alive()).toBe(false);
      // Whoever reads the tunnel hears it end.
      expect(tunnel.output.writableEnded).toBe(true);
    } finally {
      process.off("uncaughtException", note);
    }
    expect(unheard).toEqual([]);
  });
});
