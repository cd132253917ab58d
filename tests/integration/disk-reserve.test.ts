import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, RUN_LABEL, docker, execIn, json, removeTestBoxes, startServer } from "../support/server";
import { until } from "../support/until";

// A box that fills the host's disk (ADR 0034). Nothing bounds a box's writable layer (overlay2 on
// ext4 takes no size limit), so one box's `fallocate -l 60G` would leave every other box, the
// engine and the server's store without room. The server watches the free space on the engine's
// root and its state directory against HOLM_DISK_RESERVE: below it, new boxes are refused 503
// `unavailable` and the running box that wrote the most is stopped with why. The machine is not
// filled: the reserve is set to the free space at the start less 1 GiB, and one box writes 3 GiB.

const GIB = 1024 ** 3;
let server: TestServer;

/** Free bytes (for an unprivileged user, as the server reads them) on the filesystem holding `dir`. */
function freeBytes(dir: string): number {
  const s = fs.statfsSync(dir);
  return s.bavail * s.bsize;
}

/** The reserve that leaves 1 GiB before the disk counts as short: what the test then writes is over it. */
async function reserveNow(): Promise<string> {
  const root = (await docker.info()).DockerRootDir as string;
  return `${Math.floor((freeBytes(root) - GIB) / 1024 ** 2)}m`;
}

beforeAll(async () => {
  server = await startServer({ HOLM_DISK_RESERVE: await reserveNow(), HOLM_STORAGE_BACKEND: "local" });
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

async function newBox(): Promise<Response> {
  return server.api("/v1/boxes", { method: "POST", json: {} });
}

async function remove(id: string) {
  await server.api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } }).catch(() => undefined);
}

const boxOf = async (id: string) => json(await server.api(`/v1/boxes/${id}`));

describe("a box that fills the disk", () => {
  it("is stopped with why, the other box runs on, and new boxes wait for the space to come back", async () => {
    const made: string[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const res = await newBox();
        const box = await json(res);
        expect(res.status, JSON.stringify(box)).toBe(200);
        made.push(box.id);
      }
      const [filler, other] = made as [string, string];

      const exec = await server.api(`/v1/boxes/${filler}/exec`, { method: "POST", json: { argv: ["fallocate", "-l", "3G", "/tmp/fill"], timeout_ms: 60_000 } });
      const ran = await json(exec);
      expect(exec.status, JSON.stringify(ran)).toBe(200);
      expect(ran.code, JSON.stringify(ran)).toBe(0);

      // Stopped within seconds, saying what it did and that its files stay.
      const stopped = await until("the filling box stopped", () => boxOf(filler), (b) => b.state === "stopped", 20_000);
      expect(stopped.reason).toMatch(/filled the disk: 3(\.\d)? GiB written/);
      expect(stopped.reason).toMatch(/files stay until its owner removes it/);
      const entries = (await json(await server.api(`/v1/boxes/${filler}/trace?limit=500`))).entries as any[];
      expect(entries.some((e) => e.event === "stopped" && /filled the disk/.test(JSON.stringify(e))), JSON.stringify(entries.slice(-3))).toBe(true);
      await until(
        "its box.stopped event",
        async () => (await json(await server.api("/v1/events?limit=1000"))).events as any[],
        (events) => events.some((e) => e.kind === "box.stopped" && e.box_id === filler && /filled the disk/.test(JSON.stringify(e))),
        10_000,
      );

      // The other box of the server is untouched and still answers.
      expect((await boxOf(other)).state).toBe("ready");
      const echo = await json(await server.api(`/v1/boxes/${other}/exec`, { method: "POST", json: { argv: ["echo", "still here"] } }));
      expect(echo.stdout).toContain("still here");

      // While the space is short, a new box is refused up front, retryable, saying why.
      const refused = await newBox();
      const body = await json(refused);
      expect(refused.status, JSON.stringify(body)).toBe(503);
      expect(body.code).toBe("unavailable");
      expect(body.retryable).toBe(true);
      expect(body.message).toMatch(/disk/);

      // Its owner removes it: the space is back and new boxes are taken again.
      await remove(filler);
      const res = await until("a create once the space is back", async () => {
        const r = await newBox();
        const b = await json(r);
        if (r.status === 200) made.push(b.id);
        return r.status;
      }, (s) => s === 200, 30_000);
      expect(res).toBe(200);
    } finally {
      for (const id of made) await remove(id);
    }
  }, 180_000);
});

describe("a pool box that fills the disk", () => {
  it("is removed (no one's yet), and the pool fills again once there is room", async () => {
    const pool = await startServer({ HOLM_DISK_RESERVE: await reserveNow(), HOLM_POOL: "default=1" });
    const poolBoxes = async () =>
      (await docker.listContainers({ all: true, filters: { label: [`holm.test=${RUN_LABEL}`, "holm.pool=1"] } })).map((c) => c.Labels["holm.box"]!);
    const readyInPool = async () => Number(/holm_pool_boxes\{spec="default",kind="ready"\} (\d+)/.exec(await (await pool.api("/metrics")).text())?.[1] ?? 0);
    try {
      await until("a ready pool box", readyInPool, (n) => n === 1, 90_000);
      const [filler] = await poolBoxes();
      expect(filler).toBeTruthy();
      const ran = await execIn(filler!, ["fallocate", "-l", "3G", "/tmp/fill"]);
      expect(ran.code, ran.out).toBe(0);
      // Removed, container and all, which gives the space back.
      await until("the pool box removed", poolBoxes, (ids) => !ids.includes(filler!), 20_000);
      await expect(docker.getContainer(`holm-${filler}`).inspect()).rejects.toThrow();
      // And once there is room again, the pool refills with a new box.
      await until("the pool refilled", readyInPool, (n) => n === 1, 90_000);
      expect(await poolBoxes()).not.toContain(filler);
    } finally {
      await pool.stop();
      await removeTestBoxes();
    }
  }, 240_000);
});
