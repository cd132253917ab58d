import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DockerRuntime } from "../../app/runtime/docker.server";
import { ensureBaseImage } from "../../app/runtime/image-builder.server";
import { RUN_LABEL, docker } from "../support/server";

// A pause that lands while an exec is being started in the box: on cgroup v1 the exec's
// `runc init` is frozen half-started, `runc exec` holds the shim's lock waiting on it, and the
// unpause (and every later call about that container) hangs for good. A full test run hit it
// (a terminal's hang-up exec against the auth matrix's pause); raw dockerode hangs on the first
// round of this race here. The runtime keeps the two apart (app/runtime/freeze-gate.server.ts).

const ROUNDS = 25;
let ref = "";

const within = <T>(p: Promise<T>, ms: number, what: string) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} still hung after ${ms} ms`)), ms))]);

/** A frozen half-started exec blocks the container's removal too: thaw its cgroup first. */
function thaw(id: string) {
  try {
    fs.writeFileSync(`/sys/fs/cgroup/freezer/docker/${id}/freezer.state`, "THAWED");
  } catch {
    // cgroup v2, or not frozen
  }
}

beforeAll(async () => {
  const base = await ensureBaseImage(docker);
  const c = await docker.createContainer({ Image: base.image, Cmd: ["sleep", "infinity"], Labels: { "holm.test": RUN_LABEL } });
  await c.start();
  ref = c.id;
}, 600_000);

afterAll(async () => {
  if (!ref) return;
  thaw(ref);
  await docker.getContainer(ref).remove({ force: true }).catch(() => undefined);
});

describe("pause against an exec being started", () => {
  it(`a terminal opened and hung up while the box is paused and resumed never wedges it (${ROUNDS} rounds)`, async () => {
    const runtime = new DockerRuntime("/var/run/docker.sock");
    let opened = 0;
    for (let i = 0; i < ROUNDS; i++) {
      // The shell's exec and the pause go out together, the pause a random few ms later.
      const shell = runtime.shell(ref, { cols: 80, rows: 24 }).catch(() => undefined);
      await new Promise((r) => setTimeout(r, Math.random() * 20));
      await within(runtime.pause(ref), 10_000, `round ${i}: pause`);
      await within(runtime.unpause(ref), 10_000, `round ${i}: unpause`);
      const s = await within(shell, 10_000, `round ${i}: the shell's exec`);
      if (s) {
        opened++;
        // The hang-up is an exec too: it races the next round's pause.
        s.close();
      }
    }
    const info = await within(docker.getContainer(ref).inspect(), 10_000, "inspect");
    expect(info.State).toMatchObject({ Running: true, Paused: false });
    // Some shells opened before their pause and some were refused while paused; never a hang.
    expect(opened).toBeGreaterThan(0);
  }, 120_000);
});
