import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, docker, execIn, json, removeTestBoxes, startServer } from "../support/server";

// A box's start on GET /v1/boxes/{id} (holm's `start`), with real boxes: a ready box has every
// phase in order; a box whose image cannot be built, and one whose desktop dies while it starts
// (two 8K screens cannot fit in 256 MB: the kernel kills a part), are `failed` with the phase
// they failed in, the end of their log and a reason in words that points at nothing removed.

const PHASES = ["queued", "image", "container", "x", "vnc", "browser", "agent"];

let server: TestServer;
const made: string[] = [];

beforeAll(async () => {
  // Queued (202), so a failed start has an id to read back.
  server = await startServer({ HOLM_SERVER_JOBS: "queue" });
});

afterAll(async () => {
  for (const id of made) {
    await server.api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } }).catch(() => undefined);
  }
  await server?.stop();
  await removeTestBoxes();
});

/** Creates a box (queued) and waits until it is no longer starting; answers its JSON. */
async function launchAndSettle(body: unknown): Promise<any> {
  const res = await server.api("/v1/boxes", { method: "POST", json: body });
  const created = await json(res);
  expect(res.status, JSON.stringify(created)).toBe(202);
  made.push(created.id);
  expect(created.start).toMatchObject({ phase: "queued", phases: [{ name: "queued" }], log: [] });
  const deadline = Date.now() + 150_000;
  for (;;) {
    const box = await json(await server.api(`/v1/boxes/${created.id}`));
    if (box.state !== "starting") return box;
    expect(Date.now(), `still starting: ${JSON.stringify(box.start)}`).toBeLessThan(deadline);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function expectInOrder(start: any) {
  const at = start.phases.map((p: any) => p.at_ms);
  expect(at).toEqual([...at].sort((a: number, b: number) => a - b));
  expect(start.ended_ms).toBeGreaterThanOrEqual(at.at(-1));
}

describe("a box's start", () => {
  it("a ready box's start has every phase in order, and the box printed no secret", async () => {
    const box = await launchAndSettle({});
    expect(box.state, box.reason).toBe("ready");
    expect(box.start.phase).toBe("ready");
    expect(box.start.phases.map((p: any) => p.name)).toEqual(PHASES);
    expect(box.start.phases[0].at_ms).toBeGreaterThanOrEqual(box.created_at_ms);
    expectInOrder(box.start);
    expect(box.start.ended_ms - box.created_at_ms).toBeLessThan(90_000);
    expect(box.start.failed_in).toBeUndefined();
    expect(box.start.build).toBeUndefined();
    expect("reason" in box).toBe(false);
    // The seed's fields are all still there, beside holm's.
    expect(box).toMatchObject({ id: expect.any(String), runtime: "docker", state: "ready", screens: 1, viewer_url: expect.any(String) });
    const listed = (await json(await server.api("/v1/boxes"))).boxes.find((b: any) => b.id === box.id);
    expect(listed.start).toEqual(box.start);

    // What the box prints (its entrypoint, x11vnc, the agent) never holds its secrets: a failed
    // start keeps those lines.
    const secret = (await execIn(box.id, ["cat", "/etc/holm/agent.secret"])).out.trim();
    expect(secret.length).toBeGreaterThan(20);
    const logs = (await docker.getContainer(`holm-${box.id}`).logs({ stdout: true, stderr: true, follow: false })).toString("latin1");
    expect(logs).toContain("holm: chromium launched");
    expect(logs).not.toContain(secret);
    const passwd = (await execIn(box.id, ["base64", "/etc/holm/vnc.passwd"])).out.trim();
    expect(logs).not.toContain(Buffer.from(passwd, "base64").toString("latin1"));
  });

  it("a box whose image cannot be built is failed in `image`, with the build's log and apt's reason", async () => {
    const box = await launchAndSettle({ spec: { desktop: { features: [], packages: ["no-such-package-xyz"] } } });
    expect(box.state).toBe("failed");
    expect(box.start).toMatchObject({ phase: "failed", failed_in: "image" });
    expect(box.start.phases.map((p: any) => p.name)).toEqual(["queued", "image"]);
    expectInOrder(box.start);
    expect(box.start.log.length).toBeGreaterThan(3);
    expect(box.start.log.length).toBeLessThanOrEqual(40);
    expect(box.start.log).toContain("E: Unable to locate package no-such-package-xyz");
    expect(box.start.log.join("\n")).not.toMatch(/\x1b\[/);
    expect(box.reason).toMatch(/^The box image could not be built at step 4 of 10: E: Unable to locate package no-such-package-xyz$/);
    expect(box.reason).not.toMatch(/docker logs|holm-box_/);
    // Calls on it say why, in the seed's words.
    const refused = await server.api(`/v1/boxes/${box.id}/screens/0/frame`);
    expect(refused.status).toBe(409);
    expect((await json(refused)).message).toContain("E: Unable to locate package");
  });

  it("a box whose desktop dies while starting keeps its own last lines, read before its container went", async () => {
    const box = await launchAndSettle({
      spec: { desktop: { features: [], width: 7680, height: 4320, screens: 2 } },
      placement: { memory: "256m" },
    });
    expect(box.state).toBe("failed");
    expect(box.start.phase).toBe("failed");
    expect(["x", "vnc", "browser", "agent"]).toContain(box.start.failed_in);
    expect(box.start.phases.map((p: any) => p.name)).toEqual(PHASES.slice(0, PHASES.indexOf(box.start.failed_in) + 1));
    expectInOrder(box.start);
    const log: string[] = box.start.log;
    expect(log).toContain("— the box's own output —");
    expect(log.some((l) => /^│ .*holm: (fatal: .*|.* exited with status \d+; stopping the box)$/.test(l)), log.join("\n")).toBe(true);
    // The engine's words (the kernel killed a part for memory), then the box's own line, quoted.
    expect(box.reason).toMatch(/^The box did not start while waiting for [^:]*: it ran out of memory .*; the box's output says: "/);
    expect(box.reason).not.toMatch(/docker logs|holm-box_/);
    // The container itself is gone.
    const inspect = await docker.getContainer(`holm-${box.id}`).inspect().then(() => 200, (e) => e.statusCode);
    expect(inspect).toBe(404);
  });
});
