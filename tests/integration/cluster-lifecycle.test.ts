import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clusterEnv, testRedisUrl } from "../support/cluster";
import { createTestDatabase, dropTestDatabases } from "../support/postgres";
import { RUN_LABEL, type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// Two servers on one PostgreSQL and Redis (README "Several servers", ADR 0021) asked to change
// one box at the same moment: each change happens once (one trace entry, one event), whichever
// server answers, and neither answers 500. One server alone already did this with its in-process
// chain per box; across servers the chain is a lock in Redis.

const REDIS = testRedisUrl();
const WANTED = process.env.HOLM_TEST_REDIS !== "0" && process.env.HOLM_TEST_POSTGRES !== "0";

let a: TestServer;
let b: TestServer;
let database: string;

beforeAll(async () => {
  if (!WANTED) return;
  if (!REDIS) throw new Error("no Redis for the tests: run scripts/setup.sh with HOLM_TEST_REDIS=1");
  database = await createTestDatabase(RUN_LABEL);
  const shared = clusterEnv(database, REDIS);
  // One after the other: the first one migrates the shared database.
  a = await startServer(shared);
  b = await startServer(shared);
}, 120_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await removeTestBoxes();
  if (database) await dropTestDatabases([database]);
});

async function both(id: string, verb: "pause" | "resume" | "stop") {
  const answers = await Promise.all([a, b].map((s) => s.api(`/v1/boxes/${id}/${verb}`, { method: "POST" })));
  return Promise.all(answers.map(async (res) => ({ status: res.status, body: await json(res) })));
}

async function kinds(id: string): Promise<string[]> {
  const events = (await json(await a.api("/v1/events?limit=1000"))).events as any[];
  return events.filter((e) => e.box_id === id).map((e) => e.kind);
}

async function traced(id: string): Promise<string[]> {
  return ((await json(await a.api(`/v1/boxes/${id}/trace?limit=500`))).entries as any[]).map((e) => e.event);
}

const count = (list: string[], what: string) => list.filter((k) => k === what).length;

describe.runIf(WANTED)("one box changed from two servers at once", () => {
  it("pause, resume and stop each happen once, and no server answers 500", async () => {
    const res = await a.api("/v1/boxes", { method: "POST", json: {} });
    const box = await json(res);
    expect(res.status, JSON.stringify(box)).toBe(200);
    try {
      for (let round = 1; round <= 2; round++) {
        // The box's launch was its first `box.ready`.
        for (const [verb, state, event, times] of [
          ["pause", "paused", "box.paused", round],
          ["resume", "ready", "box.ready", round + 1],
        ] as const) {
          const answers = await both(box.id, verb);
          for (const ans of answers) {
            expect(ans.status, `${verb}: ${JSON.stringify(ans.body)}`).toBe(200);
            expect(ans.body.state).toBe(state);
          }
          const events = await kinds(box.id);
          expect(count(events, event), events.join()).toBe(times);
        }
      }
      const stops = await both(box.id, "stop");
      for (const ans of stops) expect(ans.status, JSON.stringify(ans.body)).toBe(200);
      const events = await kinds(box.id);
      expect(count(events, "box.stopped"), events.join()).toBe(1);
      const entries = await traced(box.id);
      expect(count(entries, "paused"), entries.join()).toBe(2);
      expect(count(entries, "resumed"), entries.join()).toBe(2);
      expect(count(entries, "stopped"), entries.join()).toBe(1);
      for (const s of [a, b]) expect(s.logs()).not.toMatch(/"internal error"/);
    } finally {
      await a.api(`/v1/boxes/${box.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    }
  }, 240_000);
});
