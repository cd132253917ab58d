import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { until } from "../support/until";

// The server reads a screen's browser restarts from the box's log (browser-restarts.server.ts),
// and anything running as root in the box (an `exec`, a process one left behind while a person
// holds the screen) can print lines there that look like the entrypoint's. Such a line may write
// into its own box's trace, but not with a time from the future (the trace keeps at_ms in order,
// so every later entry, a person's takeover included, would carry that time and never be pruned),
// nor more of them than the entrypoint could ever print (each is a trace entry, an event and a
// webhook: one exec would otherwise add all three by the hundred at every read, without end).

let server: TestServer;

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

const QUIT = "holm: chromium :99 quit (status 0); starting it again (restart 1 within a minute)";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function exec(id: string, script: string) {
  const res = await server.api(`/v1/boxes/${id}/exec`, { method: "POST", json: { argv: ["bash", "-c", script] }, signal: AbortSignal.timeout(30_000) });
  const out = await json(res);
  expect(res.status, JSON.stringify(out)).toBe(200);
  expect(out.code, JSON.stringify(out)).toBe(0);
}

async function traceOf(id: string): Promise<any[]> {
  const res = await server.api(`/v1/boxes/${id}/trace?limit=500`);
  expect(res.status).toBe(200);
  return (await json(res)).entries;
}

const restarts = (entries: any[]) => entries.filter((e) => e.event === "browser_restarted");

/** Runs `check` on a new box of one screen, removed after. */
async function withBox(check: (id: string) => Promise<void>) {
  const res = await server.api("/v1/boxes", { method: "POST", json: { spec: {} } });
  const box = await json(res);
  expect(res.status, JSON.stringify(box)).toBe(200);
  try {
    await check(box.id as string);
  } finally {
    await server.api(`/v1/boxes/${box.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } }).catch(() => undefined);
  }
}

describe("lines a box's own processes print like its entrypoint's", () => {
  it("write no trace entry dated in the future (nor move every later entry there)", () =>
    withBox(async (id) => {
      // One line dated 2099, written into PID 1's stdout: the box's log.
      await exec(id, `echo '2099-01-01T00:00:00.000 +1.000s ${QUIT}' > /proc/1/fd/1`);
      await traceOf(id);
      await sleep(1100);
      await exec(id, "true");
      const entries = await traceOf(id);
      const now = Date.now();
      const future = entries.filter((e) => e.at_ms > now + 5000);
      expect(future.map((e) => [e.seq, e.event, new Date(e.at_ms).toISOString()]), "entries dated in the future").toEqual([]);
      expect(entries.findLast((e) => e.event === "ran"), JSON.stringify(entries)).toBeDefined();
    }), 120_000);

  it("write no more restarts than the entrypoint could print", () =>
    withBox(async (id) => {
      // Three hundred lines at once, dated now; the entrypoint starts a screen's browser again at
      // once at most 5 times a minute (HOLM_BROWSER_RESTARTS_PER_MIN), then after a pause.
      await exec(id, `for i in $(seq 300); do echo "$(date -u +%Y-%m-%dT%H:%M:%S.%3N) +1.000s ${QUIT}"; done > /proc/1/fd/1`);
      await sleep(1100);
      const entries = await until("the trace read after the lines", () => traceOf(id), (e) => restarts(e).length > 0, 15_000);
      expect(restarts(entries).length, "browser_restarted entries from 300 lines").toBeLessThanOrEqual(12);
      await sleep(2500);
      const events = (await json(await server.api(`/v1/events?limit=1000`))).events.filter((e: any) => e.box_id === id && e.kind === "screen.browser_restarted");
      expect(events.length, "screen.browser_restarted events from 300 lines").toBeLessThanOrEqual(12);
    }), 120_000);
});
