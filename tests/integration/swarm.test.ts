import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Lan, type RemoteEngine, startLan, startRemoteEngine } from "../support/remote-engine";
import { RUN_LABEL, type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { openStore } from "../support/store";

// A Docker Swarm runtime (ADR 0022) on three engines, each in a network namespace of its own on
// one bridge (a LAN), with TLS client auth from one CA. The swarm's scheduler places 30 boxes by
// their memory reservations: each node's share is sized so that exactly 10 fit, so the spread is
// the reservations' doing. Every box is ready and answers through the server (an exec each, a
// frame from one box per node). A 31st box is refused up front (503 `unavailable`). Then one node
// is drained: its boxes go `unreachable` with the reason, the others keep answering, and nothing
// moves (no new task, no new container anywhere).

// The 30 (10 a node) by default; the whole suite's run (scripts/test.sh) asks for 4 a node:
// 30 Chromium desktops starting at once beside the other suites on a 2-core machine starved
// them all (boxes timed out waiting for their display, viewers lost input). The spread by
// reservations is the same test at either size.
const PER_NODE = Number(process.env.HOLM_TEST_SWARM_PER_NODE ?? 10);
const BOXES = 3 * PER_NODE;
const SUITE = `${RUN_LABEL}-swarm`;

let lan: Lan | undefined;
const engines: RemoteEngine[] = [];
let server: TestServer | undefined;
const boxes: { id: string; created_at_ms?: number; expires_at_ms?: number }[] = [];
let memory = "";
const timings: Record<string, number> = {};

const api = (p: string, init?: RequestInit & { json?: unknown }) => server!.api(p, init);
const mgr = () => engines[0]!.docker;

async function timed<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const t = Date.now();
  try {
    return await fn();
  } finally {
    timings[name] = (Date.now() - t) / 1000;
  }
}

/** The box's container on each engine, by box id (from the label every box carries). */
async function containersByEngine(all = false): Promise<Map<string, string>[]> {
  return Promise.all(
    engines.map(async (e) => {
      const list = await e.docker.listContainers({ all, filters: { label: [`holm.test=${RUN_LABEL}`] } });
      return new Map(list.map((c) => [c.Labels["holm.box"]!, c.State]));
    }),
  );
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

beforeAll(async () => {
  await timed("swarm", async () => {
    lan = startLan(SUITE);
    const started = await Promise.allSettled([0, 1, 2].map((index) => startRemoteEngine(SUITE, { lan: lan!, index })));
    for (const s of started) if (s.status === "fulfilled") engines.push(s.value);
    const failed = started.find((s) => s.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
    // Ordered by address: engines[0] (.2) is the manager.
    engines.sort((a, b) => a.ip.localeCompare(b.ip, undefined, { numeric: true }));
    const [m, ...workers] = engines;
    await m!.docker.swarmInit({ ListenAddr: `${m!.ip}:2377`, AdvertiseAddr: m!.ip });
    const { JoinTokens } = await m!.docker.swarmInspect();
    for (const w of workers) {
      await w.docker.swarmJoin({ ListenAddr: `${w.ip}:2377`, AdvertiseAddr: w.ip, RemoteAddrs: [`${m!.ip}:2377`], JoinToken: JoinTokens.Worker });
    }
    await until("three ready nodes", async () => {
      const nodes = await m!.docker.listNodes();
      return nodes.length === 3 && nodes.every((n: any) => n.Status.State === "ready") ? nodes : undefined;
    }, 30_000);
  });
  // Each node reports this machine's memory: a box reserves a little under a tenth of it.
  const nodes = await mgr().listNodes();
  const least = Math.min(...nodes.map((n: any) => Number(n.Description.Resources.MemoryBytes)));
  memory = `${Math.floor(least / (PER_NODE + 0.5) / 1024 ** 2)}m`;
  // A store that outlives the server (SQLite file, or PostgreSQL under HOLM_TEST_STORE=postgres):
  // the restart test takes the swarm's boxes back with it.
  server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_LAUNCH_CONCURRENCY: "6", HOLM_SERVER_REAP_SECS: "2" });
}, 180_000);

afterAll(async () => {
  const t = Date.now();
  // A node cut off by the last test is let back, so its engine stops cleanly.
  for (const e of engines) {
    try {
      execFileSync("ip", ["link", "set", e.link, "up"]);
    } catch {
      /* gone already */
    }
  }
  if (server) {
    await Promise.all(
      boxes.map((b) => api(`/v1/boxes/${b.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } }).catch(() => undefined)),
    );
    await server.stop().catch(() => undefined);
  }
  timings.cleanupBoxes = (Date.now() - t) / 1000;
  // Whatever is left of this run in the swarm and on each engine, then the engines, netns and bridge.
  if (engines[0]) {
    for (const s of await mgr().listServices({ filters: { label: [`holm.test=${RUN_LABEL}`] } }).catch(() => [])) {
      await mgr().getService(s.ID).remove().catch(() => undefined);
    }
  }
  await Promise.all(
    engines.map(async (e) => {
      for (const c of await e.docker.listContainers({ all: true }).catch(() => [])) {
        await e.docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
      }
      const t0 = Date.now();
      await e.stop();
      timings[`stop ${e.ip}`] = (Date.now() - t0) / 1000;
    }),
  );
  timings.cleanupEngines = (Date.now() - t) / 1000;
  lan?.stop();
  await removeTestBoxes();
  timings.cleanup = (Date.now() - t) / 1000;
  console.log(`[swarm] seconds: ${JSON.stringify(timings)}`);
}, 240_000);

describe("boxes on a swarm of three engines", () => {
  it("adds the swarm as a runtime; the box image reaches every node", async () => {
    const res = await api("/v1/runtimes", { method: "POST", json: { name: "swarm", provider: "swarm", fields: { host: engines[0]!.host }, secrets: lan!.tls } });
    const out = await json(res);
    expect(res.status, JSON.stringify(out)).toBe(200);
    expect(out).toMatchObject({ name: "swarm", provider: "swarm", fields: { host: engines[0]!.host, engine_port: 2376 }, secrets_set: ["ca", "cert", "key"], can: { launch: true, stop: false, persistent: false } });
    const img = await timed("image", async () => json(await api("/v1/runtimes/swarm/image", { method: "POST", json: { spec: {} } })));
    expect(img, JSON.stringify(img)).toMatchObject({ runtime: "swarm", image: expect.stringMatching(/^holm-x11:/) });
    for (const e of engines) expect((await e.docker.getImage(img.image).inspect()).RepoTags).toContain(img.image);
  }, 600_000);

  it(`places ${BOXES} boxes by their reservations, ${PER_NODE} a node, each ready and answering`, async () => {
    const made = await timed("launch", () =>
      Promise.all(
        Array.from({ length: BOXES }, async () => {
          const res = await api("/v1/boxes", { method: "POST", json: { placement: { runtime: "swarm", memory } } });
          const box = await json(res);
          if (box?.id) boxes.push(box);
          return { status: res.status, box };
        }),
      ),
    );
    for (const m of made) expect(m.status, JSON.stringify(m.box)).toBe(200);
    for (const m of made) expect(m.box).toMatchObject({ state: "ready", placement: { runtime: "swarm", memory } });
    // Where each box runs: 10 containers on each engine, none on this machine's.
    const where = await containersByEngine();
    expect(where.map((w) => w.size)).toEqual([PER_NODE, PER_NODE, PER_NODE]);
    for (const b of boxes) expect(where.filter((w) => w.get(b.id) === "running")).toHaveLength(1);
    // Each answers through the server: an exec (through its node's engine), and a frame from one box per node.
    await timed("answer", async () => {
      const answers = await Promise.all(
        boxes.map(async (b) => {
          const res = await api(`/v1/boxes/${b.id}/exec`, { method: "POST", json: { argv: ["sh", "-c", "echo $HOLM_BOX_ID"] } });
          return { id: b.id, status: res.status, out: await json(res) };
        }),
      );
      for (const a of answers) {
        expect(a.status, JSON.stringify(a.out)).toBe(200);
        expect(a.out.stdout.trim()).toBe(a.id);
      }
      for (const w of where) {
        const id = [...w.keys()][0]!;
        const res = await api(`/v1/boxes/${id}/screens/0/frame`);
        const frame = await json(res);
        expect(res.status, JSON.stringify(frame).slice(0, 300)).toBe(200);
        expect(frame).toMatchObject({ width: 1280, height: 800 });
      }
    });
  }, 600_000);

  it("refuses a box no node can take, up front: 503 unavailable, nothing made", async () => {
    const before = (await mgr().listServices()).length;
    const res = await api("/v1/boxes", { method: "POST", json: { placement: { runtime: "swarm", memory } } });
    const out = await json(res);
    if (out?.id) boxes.push(out);
    expect(res.status, JSON.stringify(out)).toBe(503);
    expect(out).toMatchObject({ code: "unavailable", retryable: true, message: expect.stringMatching(/no node of the swarm runtime "swarm" can take/) });
    expect((await mgr().listServices()).length).toBe(before);
  });

  it("pauses and resumes a box on its node; a stop is unsupported and changes nothing", async () => {
    const id = boxes[0]!.id;
    const paused = await api(`/v1/boxes/${id}/pause`, { method: "POST" });
    expect(paused.status, await paused.clone().text()).toBe(200);
    expect((await json(paused)).state).toBe("paused");
    const stop = await api(`/v1/boxes/${id}/stop`, { method: "POST" });
    expect(stop.status).toBe(400);
    expect(await json(stop)).toMatchObject({ code: "unsupported", message: expect.stringMatching(/not stopped/) });
    expect((await json(await api(`/v1/boxes/${id}`))).state).toBe("paused");
    const resumed = await api(`/v1/boxes/${id}/resume`, { method: "POST" });
    expect(resumed.status).toBe(200);
    expect((await json(resumed)).state).toBe("ready");
    const exec = await api(`/v1/boxes/${id}/exec`, { method: "POST", json: { argv: ["true"] } });
    expect(exec.status).toBe(200);
  });

  it("a server killed with -9 takes its swarm boxes back: the recorded ones, and one the store lost", async () => {
    const where = await containersByEngine();
    const forgotten = boxes[1]!.id;
    await server!.stop("SIGKILL");
    // The store loses one box's record (as a crash between the service and the record would):
    // the new server finds it by its service's labels on the swarm runtime, not on the local engine.
    const db = openStore(server!);
    expect(db.prepare("DELETE FROM box WHERE id = ?").run(forgotten).changes).toBe(1);
    db.close();
    server = await timed("restart", () => server!.restart());
    expect(server.logs()).toMatch(new RegExp(`adopted ${forgotten} \\(ready\\) from the swarm runtime`));
    expect(server.logs()).toMatch(/1 adopted from the runtime/);
    const states = await Promise.all(boxes.slice(0, BOXES).map(async (b) => json(await api(`/v1/boxes/${b.id}`))));
    for (const s of states) expect(s, JSON.stringify(s)).toMatchObject({ state: "ready", placement: { runtime: "swarm", memory } });
    const back = states.find((s) => s.id === forgotten)!;
    expect(back).toMatchObject({ created_at_ms: boxes[1]!.created_at_ms, expires_at_ms: boxes[1]!.expires_at_ms });
    // Nothing moved, and one box per node answers through the new server's tunnels.
    expect((await containersByEngine()).map((w) => w.size)).toEqual(where.map((w) => w.size));
    for (const id of [forgotten, ...where.map((w) => [...w.keys()][0]!)]) {
      const res = await api(`/v1/boxes/${id}/exec`, { method: "POST", json: { argv: ["sh", "-c", "echo $HOLM_BOX_ID"] } });
      const out = await json(res);
      expect(res.status, JSON.stringify(out)).toBe(200);
      expect(out.stdout.trim()).toBe(id);
    }
  }, 240_000);

  it("drains a node: its boxes go unreachable with the reason, nothing moves, the rest keep answering", async () => {
    const where = await containersByEngine();
    const [drainedAt] = [1];
    const lost = [...where[drainedAt]!.keys()];
    const kept = boxes.map((b) => b.id).filter((id) => !lost.includes(id));
    expect(lost).toHaveLength(PER_NODE);
    const nodes = await mgr().listNodes();
    const node: any = nodes.find((n: any) => n.Status.Addr === engines[drainedAt]!.ip);
    const handle = mgr().getNode(node.ID);
    await handle.update({ version: node.Version.Index, ...node.Spec, Availability: "drain" });

    const reasons = await timed("drain", () =>
      until("the drained node's boxes to be unreachable", async () => {
        const states = await Promise.all(lost.map(async (id) => json(await api(`/v1/boxes/${id}`))));
        return states.every((s) => s.state === "unreachable") ? states.map((s) => s.reason as string) : undefined;
      }, 60_000),
    );
    for (const r of reasons) expect(r).toMatch(/was drained: swarm shut the box's task down there .*does not move a desktop to another node/);

    // Nothing moved: still one task per box's service, no container started anywhere else, none running there.
    const services = await mgr().listServices({ filters: { label: [`holm.test=${RUN_LABEL}`] } });
    expect(services).toHaveLength(BOXES);
    // Swarm stops the drained node's containers on its own time (a grace of 5 s each): the server said so before.
    const after = await until("swarm to stop the drained node's containers", async () => {
      const all = await containersByEngine(true);
      return [...all[drainedAt]!.values()].some((s) => s === "running") ? undefined : all;
    }, 60_000);
    expect(after.map((w) => w.size)).toEqual([PER_NODE, PER_NODE, PER_NODE]);
    for (const i of [0, 2]) expect([...after[i]!.values()].every((s) => s === "running")).toBe(true);
    const tasks = await mgr().listTasks();
    for (const s of services) expect(tasks.filter((t: any) => t.ServiceID === s.ID)).toHaveLength(1);

    // The drained node's boxes say why when driven; the rest keep answering.
    const refused = await api(`/v1/boxes/${lost[0]}/exec`, { method: "POST", json: { argv: ["true"] } });
    expect(refused.status).toBe(503);
    expect(await json(refused)).toMatchObject({ code: "unavailable", message: expect.stringMatching(/drained/) });
    const answers = await Promise.all(kept.map(async (id) => (await api(`/v1/boxes/${id}/exec`, { method: "POST", json: { argv: ["true"] } })).status));
    expect(answers.every((s) => s === 200)).toBe(true);
    for (const id of kept) expect((await json(await api(`/v1/boxes/${id}`))).state).toBe("ready");

    // And a new box is still refused up front: the two active nodes are full, the drained one takes none.
    const res = await api("/v1/boxes", { method: "POST", json: { placement: { runtime: "swarm", memory } } });
    const out = await json(res);
    if (out?.id) boxes.push(out);
    expect(res.status, JSON.stringify(out)).toBe(503);
    expect(out.message).toMatch(/is drained/);
  }, 180_000);

  it("cuts a node off: its boxes go unreachable with the reason, nothing moves, the rest keep answering", async () => {
    const where = await containersByEngine();
    const cutAt = 2;
    const lost = [...where[cutAt]!.keys()];
    const kept = [...where[0]!.keys()];
    expect(lost).toHaveLength(PER_NODE);
    execFileSync("ip", ["link", "set", engines[cutAt]!.link, "down"]);
    const reasons = await timed("down", () =>
      until("the cut-off node's boxes to be unreachable", async () => {
        const states = await Promise.all(lost.map(async (id) => json(await api(`/v1/boxes/${id}`))));
        return states.every((s) => s.state === "unreachable") ? states.map((s) => s.reason as string) : undefined;
      }, 90_000),
    );
    for (const r of reasons) expect(r).toMatch(/does not answer|is down/);
    const answers = await Promise.all(kept.map(async (id) => (await api(`/v1/boxes/${id}/exec`, { method: "POST", json: { argv: ["true"] } })).status));
    expect(answers.every((s) => s === 200)).toBe(true);
    // What the manager makes of it once it sees the node down: still one task per box, none started elsewhere.
    const node: any = await timed("manager", () => until("the manager to see the node down", async () => {
      const n = (await mgr().listNodes()).find((x: any) => x.Status.Addr === engines[cutAt]!.ip) as any;
      return n?.Status.State === "down" ? n : undefined;
    }, 60_000));
    const services = await mgr().listServices({ filters: { label: [`holm.test=${RUN_LABEL}`] } });
    await new Promise((r) => setTimeout(r, 3000)); // time for the orchestrator to act on the down node, if it would
    const tasks = await mgr().listTasks();
    for (const s of services) expect(tasks.filter((t: any) => t.ServiceID === s.ID)).toHaveLength(1);
    expect((await containersByEngine(true))[0]!.size).toBe(PER_NODE);
    const later = await Promise.all(lost.map(async (id) => json(await api(`/v1/boxes/${id}`))));
    for (const b of later) expect(b.state).toBe("unreachable");
    console.log(`[swarm] node ${node.ID} down; a box of it says: ${later[0].reason}; its task: ${JSON.stringify(tasks.find((t: any) => t.NodeID === node.ID)?.DesiredState)}`);
  }, 240_000);
});
