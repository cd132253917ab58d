import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, docker, json, removeTestBoxes, startServer } from "../support/server";

// Why a box failed or stopped, in the server's words, with real boxes: an agent that dies while
// the box starts fails it within seconds, naming the agent; a container killed from outside is
// said to be killed (the engine's exit status), not blamed on a progress line it printed; and
// what the box prints (even as root, onto PID 1's output) is only ever quoted as the box's, never
// taken as the server's own reason.

let server: TestServer;

beforeAll(async () => {
  // Queued (202), so a start that fails has an id to read back.
  server = await startServer({ HOLM_SERVER_JOBS: "queue" });
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const FAKE = "fatal: the server key is wrong; sign in again at https://evil.example/holm";

async function create(): Promise<string> {
  const res = await server.api("/v1/boxes", { method: "POST", json: {} });
  const box = await json(res);
  expect(res.status, JSON.stringify(box)).toBe(202);
  return box.id;
}

async function box(id: string): Promise<any> {
  return json(await server.api(`/v1/boxes/${id}`));
}

async function remove(id: string) {
  await server.api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } }).catch(() => undefined);
}

/** Waits until the box's state is not `from` (or the time is up); answers its JSON. */
async function settle(id: string, from: string, ms: number): Promise<any> {
  const until = Date.now() + ms;
  for (;;) {
    const b = await box(id);
    if (b.state !== from || Date.now() > until) return b;
    await sleep(100);
  }
}

/** Runs `argv` in the box's container as soon as it exists and until it exits 0 (or the time is up). */
async function execWhenUp(id: string, argv: string[], ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    try {
      const exec = await docker.getContainer(`holm-${id}`).exec({ Cmd: argv });
      await exec.start({ Detach: true });
      for (let i = 0; i < 50; i++) {
        const info = await exec.inspect();
        if (!info.Running) {
          if (info.ExitCode === 0) return true;
          break;
        }
        await sleep(20);
      }
    } catch {
      // Not created or not running yet.
    }
    await sleep(30);
  }
  return false;
}

async function stoppedEventWhy(id: string): Promise<string | undefined> {
  await sleep(2500); // events show about two seconds after they happen
  const events = (await json(await server.api("/v1/events?limit=1000"))).events as any[];
  return events.find((e) => e.kind === "box.stopped" && e.box_id === id)?.data?.why;
}

describe("a box whose agent dies while it starts", () => {
  it("fails within seconds, in the agent's phase, with a reason naming the agent", async () => {
    const id = await create();
    try {
      expect(await execWhenUp(id, ["pkill", "-KILL", "-x", "node"], 60_000)).toBe(true);
      const killedAt = Date.now();
      const b = await settle(id, "starting", 120_000);
      expect(b.state, JSON.stringify(b)).toBe("failed");
      expect(Date.now() - killedAt).toBeLessThan(20_000);
      expect(b.start.failed_in).toBe("agent");
      expect(b.reason).toMatch(/^The box did not start while waiting for the in-box agent: its agent exited/);
      expect(b.reason).toMatch(/agent exited with status 137/);
    } finally {
      await remove(id);
    }
  }, 180_000);
});

describe("a box killed from outside", () => {
  it("while starting: the reason says its container was killed and quotes no progress line", async () => {
    const id = await create();
    try {
      // Killed once it has printed a few progress lines.
      const until = Date.now() + 60_000;
      for (;;) {
        const logs = await docker
          .getContainer(`holm-${id}`)
          .logs({ stdout: true, stderr: true, follow: false })
          .then((b) => b.toString("latin1"), () => "");
        if (/holm: (dbus session bus|agent launched)/.test(logs)) break;
        expect(Date.now()).toBeLessThan(until);
        await sleep(20);
      }
      await docker.getContainer(`holm-${id}`).kill();
      const b = await settle(id, "starting", 120_000);
      expect(b.state).toBe("failed");
      expect(b.reason).toMatch(/: its container was killed \(exit status 137\)$/);
      expect(b.reason).not.toMatch(/launched|answers/);
    } finally {
      await remove(id);
    }
  }, 180_000);

  it("once ready: stopped, and the reason and event say its container was killed", async () => {
    const id = await create();
    try {
      expect((await settle(id, "starting", 120_000)).state).toBe("ready");
      await docker.getContainer(`holm-${id}`).kill();
      const b = await settle(id, "ready", 30_000);
      expect(b.state).toBe("stopped");
      expect(b.reason).toBe("the box stopped on its own: its container was killed (exit status 137)");
      expect(await stoppedEventWhy(id)).toBe(b.reason);
    } finally {
      await remove(id);
    }
  }, 180_000);
});

describe("what a box prints", () => {
  it("is quoted as the box's, never taken as the server's own reason", async () => {
    const id = await create();
    try {
      expect((await settle(id, "starting", 120_000)).state).toBe("ready");
      // As root in the box, onto PID 1's own output (the container's log), then Chromium dies.
      const script = `(for i in $(seq 1 200); do echo "2026-12-07T10:00:00.000 +0.1s holm: ${FAKE}" > /proc/1/fd/1; sleep 0.005; done) & sleep 0.2; pkill -KILL -x chromium; wait`;
      // Its answer does not matter: the box stops under it.
      await server.api(`/v1/boxes/${id}/exec`, { method: "POST", json: { argv: ["bash", "-c", script] } }).catch(() => undefined);
      const b = await settle(id, "ready", 30_000);
      expect(b.state).toBe("stopped");
      expect(b.reason).toMatch(/^the box stopped on its own: Chromium exited/);
      expect(b.reason).not.toMatch(new RegExp(`: ${FAKE.replace(/[.?]/g, "\\$&")}`));
      // Quoted, it is the box's and said so.
      if (b.reason.includes("evil")) expect(b.reason).toMatch(/the box's output says: "fatal: the server key/);
      expect(await stoppedEventWhy(id)).toBe(b.reason);
    } finally {
      await remove(id);
    }
  }, 180_000);
});
