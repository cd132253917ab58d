import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clusterEnv, testRedisUrl } from "../support/cluster";
import { createTestDatabase, dropTestDatabases } from "../support/postgres";
import { RUN_LABEL, type TestServer, docker, json, removeTestBoxes, startServer } from "../support/server";
import { until } from "../support/until";

// A screen's browser that quits is started again by the box's entrypoint (kiosk-restart.test.ts),
// and its tabs come back blank: the trace and the event log must say so, once, or a person
// scrubbing the trace (or an agent reading it) sees pages vanish with no entry saying why. The box
// has no channel to the server (ADR 0007): the server reads it from the box's log
// (browser-restarts.server.ts), keeps what it has written in its store, and so writes each
// restart once, across a server restart that reads the same log again.

let server: TestServer;

beforeAll(async () => {
  // A durable store: the trace and what was read of the box's log outlive the server's restart.
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const running = async (id: string) => (await docker.getContainer(`holm-${id}`).inspect()).State.Running;

async function batch(id: string, screen: number, body: unknown, on: TestServer = server) {
  const res = await on.api(`/v1/boxes/${id}/screens/${screen}/actions`, { method: "POST", json: body, signal: AbortSignal.timeout(30_000) });
  return { status: res.status, out: await json(res) };
}

async function tabsOf(id: string, screen: number, on: TestServer = server): Promise<any[]> {
  const res = await on.api(`/v1/boxes/${id}/pages`, { signal: AbortSignal.timeout(10_000) }).catch(() => undefined);
  if (res?.status !== 200) return [];
  return ((await json(res)).tabs as any[]).filter((t) => t.screen === screen);
}

async function traceOf(id: string, on: TestServer = server): Promise<any[]> {
  const res = await on.api(`/v1/boxes/${id}/trace?limit=500`);
  expect(res.status).toBe(200);
  return (await json(res)).entries;
}

async function eventsOf(id: string, on: TestServer = server): Promise<any[]> {
  const res = await on.api(`/v1/events?limit=1000`);
  expect(res.status).toBe(200);
  return ((await json(res)).events as any[]).filter((e) => e.box_id === id);
}

const restarts = (entries: any[]) => entries.filter((e) => e.event === "browser_restarted");
const AGENT = `data:text/html,<title>Agent page</title><h1>the agent</h1>`;

/** Opens a page on screen 1 and quits its browser (ctrl+w on its last tab); back once the box has started it again. */
async function quitScreen1(id: string, on: TestServer = server) {
  expect((await batch(id, 1, { actions: [{ type: "open_url", url: AGENT, target: "current" }] }, on)).status).toBe(200);
  const agent = await until("screen 1's page", () => tabsOf(id, 1, on), (t) => t.length === 1 && t[0].title === "Agent page");
  await until(
    "screen 1's active window is Chromium's",
    async () => JSON.stringify(await json(await on.api(`/v1/boxes/${id}/screens/1/windows/active`))),
    (w) => /chromium/i.test(w),
  );
  // ctrl+w on its last tab: Chromium quits with status 0 and the entrypoint starts it again.
  const quit = await batch(id, 1, { actions: [{ type: "click", at: { x: 640, y: 500 } }, { type: "press", chord: "ctrl+w" }] }, on);
  expect(quit.status, JSON.stringify(quit.out)).toBe(200);
  const back = await until(
    "screen 1's browser back on a blank tab, or the box stopped",
    async () => ({ running: await running(id), tabs: await tabsOf(id, 1, on) }),
    (v) => !v.running || (v.tabs.length === 1 && v.tabs[0].id !== agent[0].id),
    20_000,
  );
  expect(back.running, "the box's container stopped").toBe(true);
}

describe("a screen's browser that quits and is started again", () => {
  it("shows once in the box's trace and its events, also after the server restarts and reads the box's log again", async () => {
    const res = await server.api("/v1/boxes", { method: "POST", json: { spec: { desktop: { screens: 2 } } } });
    const box = await json(res);
    expect(res.status, JSON.stringify(box)).toBe(200);
    const id = box.id as string;
    try {
      await quitScreen1(id);

      // The trace says why screen 1's tabs went: one entry, the server's, after the ctrl+w.
      const entries = await until("the trace's entry for the restart", () => traceOf(id), (e) => restarts(e).length > 0, 45_000);
      const [entry, ...more] = restarts(entries);
      expect(more, JSON.stringify(entries)).toEqual([]);
      expect(entry).toMatchObject({ actor: "server", screen: 1, data: { quits_in_minute: 1 } });
      const ctrlW = entries.findLast((e) => e.event === "acted" && e.data?.step?.type === "press");
      expect(ctrlW, JSON.stringify(entries)).toBeDefined();
      expect(entry.seq).toBeGreaterThan(ctrlW.seq);
      expect(entry.at_ms).toBeGreaterThanOrEqual(ctrlW.at_ms - 2000);

      // The event log has it too, once.
      const events = await until("the restart's event", () => eventsOf(id), (e) => e.some((x) => x.kind === "screen.browser_restarted"), 15_000);
      const restartEvents = events.filter((e) => e.kind === "screen.browser_restarted");
      expect(restartEvents.length, JSON.stringify(events)).toBe(1);
      expect(restartEvents[0].data).toMatchObject({ screen: 1, quits_in_minute: 1 });

      // Reading again, and a new server process reading the same log again, add nothing.
      await sleep(1000);
      expect(restarts(await traceOf(id)).length).toBe(1);
      await server.stop();
      server = await server.restart();
      expect((await json(await server.api(`/v1/boxes/${id}`))).state).toBe("ready");
      for (let i = 0; i < 3; i++) {
        expect(restarts(await traceOf(id)).map((e) => e.seq)).toEqual([entry.seq]);
        await sleep(1000);
      }
      await sleep(2500);
      expect((await eventsOf(id)).filter((e) => e.kind === "screen.browser_restarted").length).toBe(1);
    } finally {
      await server.api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } }).catch(() => undefined);
    }
  }, 240_000);

  // Two servers on one store (README "Several servers"), both asked for the trace at the same
  // moment after the restart (no sweep finds it first: theirs are an hour apart): each reads the
  // box's log and finds the restart; one writes it.
  const REDIS = testRedisUrl();
  it.skipIf(process.env.HOLM_TEST_REDIS === "0" || process.env.HOLM_TEST_POSTGRES === "0")(
    "two server processes reading the same box's log write its restart once",
    async () => {
      if (!REDIS) throw new Error("no Redis for the tests: run scripts/setup.sh with HOLM_TEST_REDIS=1");
      const database = await createTestDatabase(RUN_LABEL);
      const shared = clusterEnv(database, REDIS, { HOLM_SERVER_REAP_SECS: "3600" });
      const a = await startServer(shared);
      const b = await startServer(shared);
      let id: string | undefined;
      try {
        const res = await a.api("/v1/boxes", { method: "POST", json: { spec: { desktop: { screens: 2 } } } });
        const box = await json(res);
        expect(res.status, JSON.stringify(box)).toBe(200);
        id = box.id as string;
        await quitScreen1(id, a);
        for (let i = 0; i < 5; i++) {
          await Promise.all([traceOf(id!, a), traceOf(id!, b)]);
          await sleep(1100);
        }
        for (const on of [a, b]) {
          const entries = await traceOf(id, on);
          expect(restarts(entries).map((e) => [e.screen, e.data.quits_in_minute]), JSON.stringify(entries.map((e) => e.event))).toEqual([[1, 1]]);
        }
        await sleep(2500);
        expect((await eventsOf(id, b)).filter((e) => e.kind === "screen.browser_restarted").length).toBe(1);
      } finally {
        if (id) await a.api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } }).catch(() => undefined);
        await Promise.all([a.stop(), b.stop()]);
        await dropTestDatabases([database]);
      }
    },
    240_000,
  );
});
