import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { type TestServer, RUN_LABEL, docker, json, removeTestBoxes, startServer } from "../support/server";
import { until } from "../support/until";
import { type Api, twoWorkspaces } from "../support/workspaces";

// The warm pool (ADR 0014) when the world misbehaves: claims refused while a refill lands, pool
// boxes killed or removed behind holm's back. Two default boxes, one box per workspace.

const POOL = 2;
let server: TestServer;
let asA: Api;
let asB: Api;
let adminPage: () => Promise<string>;

afterAll(async () => {
  await server?.stop("SIGKILL");
  await removeTestBoxes();
});

/** Pool containers (by the label a pool launch sets) not claimed by anyone: not in a workspace's list. */
async function unclaimedPoolContainers(): Promise<string[]> {
  const found = await docker.listContainers({ all: true, filters: { label: [`holm.test=${RUN_LABEL}`, "holm.pool=1"] } });
  const owned = new Set<string>();
  for (const api of [asA, asB]) for (const b of (await json(await api("/v1/boxes"))).boxes as any[]) owned.add(b.id);
  return found.map((c) => c.Labels["holm.box"]!).filter((id) => !owned.has(id));
}

/** Waits until the admin's Settings page shows the pool full, nothing refilling. */
async function poolFull(within = 90_000) {
  await until(
    "the pool to be full",
    adminPage,
    (html) => new RegExp(`Ready</dt><dd[^>]*>${POOL}<`).test(html) && /Refilling<\/dt><dd[^>]*>0</.test(html),
    within,
  );
}

const remove = (api: Api, id: string) => api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });

beforeAll(async () => {
  server = await startServer({ HOLM_POOL: `default=${POOL}`, HOLM_POOL_MAX_MEMORY: "6g", HOLM_WORKSPACE_BOXES: "1", HOLM_LAUNCH_CONCURRENCY: "4" });
  const w = await twoWorkspaces(server);
  asA = w.asA;
  asB = w.asB;
  adminPage = () => w.c.page(w.ada, "/settings");
  await poolFull();
}, 120_000);

describe("warm pool, world misbehaving", () => {
  it("creates refused by the quota while the refill lands leave every pool box in the pool: none leaked, the pool keeps its size", async () => {
    await poolFull();
    const first = await asA("/v1/boxes", { method: "POST", json: {} });
    const mine = await json(first);
    onTestFinished(async () => void (await remove(asA, mine.id)));
    expect(first.status, JSON.stringify(mine)).toBe(200);
    // A is at its one box: every further create is refused, each after taking the waiting pool
    // box off the ready list for its claim and putting it back. They go on until the refill lands.
    const mark = server.logs().length;
    const refilled = () => /pool: box_\w+ ready/.test(server.logs().slice(mark));
    const statuses = new Set<number>();
    let stop = false;
    const hammer = async () => {
      while (!stop) statuses.add((await asA("/v1/boxes", { method: "POST", json: {} })).status);
    };
    const loops = Array.from({ length: 6 }, hammer);
    await until("the refill to land", refilled, Boolean, 60_000).finally(() => (stop = true));
    await Promise.all(loops);
    expect([...statuses]).toEqual([409]);
    await poolFull();
    // Two sweeps more: a surplus box would have been launched by now.
    await new Promise((r) => setTimeout(r, 4500));
    await poolFull();
    expect(await unclaimedPoolContainers()).toHaveLength(POOL);
  }, 120_000);

  it("pool boxes killed and removed behind holm's back: the claim gets a working box, the pool refills, nothing is left, no event names them", async () => {
    await poolFull();
    const [killed, removed] = await unclaimedPoolContainers();
    await docker.getContainer(`holm-${killed}`).kill();
    await docker.getContainer(`holm-${removed}`).remove({ force: true });
    const res = await asB("/v1/boxes", { method: "POST", json: {} });
    const box = await json(res);
    onTestFinished(async () => void (await remove(asB, box.id)));
    expect(res.status, JSON.stringify(box)).toBe(200);
    expect(box.state).toBe("ready");
    expect([killed, removed]).not.toContain(box.id);
    const { tabs } = await json(await asB(`/v1/boxes/${box.id}/pages`));
    expect(tabs).toHaveLength(1);

    await poolFull();
    // The killed box's container is removed too, not left stopped beside the refill.
    const left = await until("the dead pool boxes to go", unclaimedPoolContainers, (ids) => !ids.includes(killed) && !ids.includes(removed), 30_000);
    expect(left).toHaveLength(POOL);
    // Never anyone's box: no event names them, not even to the operator (whose webhooks get
    // every event with no owner), as none named them while they were in the pool.
    const events = (await json(await server.api("/v1/events?limit=1000"))).events as any[];
    expect(events.filter((e) => e.box_id === killed || e.box_id === removed)).toEqual([]);
    expect((await server.api(`/v1/boxes/${killed}`)).status).toBe(404);
    expect((await server.api(`/v1/boxes/${removed}/trace`)).status).toBe(404);
  }, 120_000);

  // Last: it leaves the pool refilling.
  it("pool boxes that die as they boot are launched again at a slowing pace, not as fast as they die; the pool fills once they live", async () => {
    await poolFull();
    // Something on the host (an OOM killer, a cleanup script) kills every pool container as it starts.
    const events = await docker.getEvents({ filters: { type: ["container"], event: ["start"], label: [`holm.test=${RUN_LABEL}`, "holm.pool=1"] } });
    onTestFinished(() => (events as unknown as { destroy(): void }).destroy());
    let starts = 0;
    events.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) {
        starts++;
        void docker.getContainer(JSON.parse(line).id).kill().catch(() => undefined);
      }
    });
    // The pool loses both of its boxes: each refill dies at once.
    for (const id of await unclaimedPoolContainers()) await docker.getContainer(`holm-${id}`).kill();
    await new Promise((r) => setTimeout(r, 15_000));
    (events as unknown as { destroy(): void }).destroy();
    // At once again and again, that was a desktop booting every second or so, for nothing.
    expect(starts).toBeLessThanOrEqual(8);
    expect(starts).toBeGreaterThan(1);
    await poolFull(90_000);
  }, 150_000);
});
