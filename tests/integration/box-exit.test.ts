import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { type TestServer, docker, execIn, json, removeTestBoxes, startServer } from "../support/server";

// What ends a box, and what must not: closing its last tab or Chromium's last window leaves a
// blank one (Chromium quitting took the whole box down, and the server kept calling it "ready");
// a box whose container exits on its own is `stopped` with a reason, an event and a trace entry,
// and calls say so (409) rather than 500 or a hang; CDP messages count as use for the idle timeout.

let server: TestServer;

beforeAll(async () => {
  // The reaper runs often, as the idle test below needs.
  server = await startServer({ HOLM_SERVER_REAP_SECS: "5", HOLM_STORAGE_BACKEND: "local" });
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function newBox(placement: Record<string, unknown> = {}): Promise<string> {
  const res = await server.api("/v1/boxes", { method: "POST", json: { placement } });
  const box = await json(res);
  expect(res.status, JSON.stringify(box)).toBe(200);
  expect(box.state).toBe("ready");
  return box.id;
}

async function remove(id: string) {
  await server.api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } }).catch(() => undefined);
}

const running = async (id: string) => (await docker.getContainer(`holm-${id}`).inspect()).State.Running;

async function tabs(id: string): Promise<any[]> {
  const res = await server.api(`/v1/boxes/${id}/pages`, { signal: AbortSignal.timeout(20_000) });
  const out = await json(res);
  expect(res.status, JSON.stringify(out)).toBe(200);
  return out.tabs ?? out;
}

/** The box lives on a few seconds later: its container runs, /v1 says ready, and its one tab is blank. */
async function stillAlive(id: string) {
  await sleep(3000);
  expect(await running(id)).toBe(true);
  const box = await json(await server.api(`/v1/boxes/${id}`));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  const now = await tabs(id);
  expect(now.length, JSON.stringify(now)).toBe(1);
  expect(now[0].url).toBe("about:blank");
}

describe("closing the browser's last tab or window", () => {
  it("DELETE of the last tab answers closed and leaves a blank tab; the box lives", async () => {
    const id = await newBox();
    try {
      const before = await tabs(id);
      expect(before.length).toBe(1);
      const res = await server.api(`/v1/boxes/${id}/pages/${before[0].id}`, { method: "DELETE" });
      const out = await json(res);
      expect(res.status, JSON.stringify(out)).toBe(200);
      expect(out.closed).toBe(true);
      await stillAlive(id);
      expect((await tabs(id))[0].id).not.toBe(before[0].id);
    } finally {
      await remove(id);
    }
  }, 120_000);

  it("DELETE of Chromium's last window leaves a blank window; the box lives", async () => {
    const id = await newBox();
    try {
      const list = await json(await server.api(`/v1/boxes/${id}/screens/0/windows`));
      const browser = (list.windows ?? list).filter((w: any) => /chromium/i.test(w.class));
      expect(browser.length, JSON.stringify(list)).toBe(1);
      const res = await server.api(`/v1/boxes/${id}/screens/0/windows/${browser[0].id}`, { method: "DELETE" });
      const out = await json(res);
      expect(res.status, JSON.stringify(out)).toBe(200);
      expect(JSON.stringify(out)).toMatch(/"closed":true/);
      await stillAlive(id);
      const after = await json(await server.api(`/v1/boxes/${id}/screens/0/windows`));
      const now = (after.windows ?? after).filter((w: any) => /chromium/i.test(w.class));
      expect(now.length, JSON.stringify(after)).toBe(1);
      expect(now[0].id).not.toBe(browser[0].id);
    } finally {
      await remove(id);
    }
  }, 120_000);
});

describe("a box whose container exits on its own", () => {
  it("is stopped with a reason, an event and a trace entry, and calls answer 409, not 500", async () => {
    const id = await newBox();
    try {
      // Chromium dies (as when it crashes): the entrypoint stops the box.
      await execIn(id, ["pkill", "-KILL", "-x", "chromium"]).catch(() => undefined);
      const until = Date.now() + 20_000;
      while (Date.now() < until && (await running(id))) await sleep(100);
      expect(await running(id)).toBe(false);
      // At once, before any reaper sweep: a call learns the box stopped.
      const t0 = Date.now();
      const res = await server.api(`/v1/boxes/${id}/pages`, { signal: AbortSignal.timeout(20_000) });
      const out = await json(res);
      expect(Date.now() - t0).toBeLessThan(10_000);
      expect(res.status, JSON.stringify(out)).toBe(409);
      expect(out.error?.message ?? JSON.stringify(out)).toMatch(/stopped/);
      const box = await json(await server.api(`/v1/boxes/${id}`));
      expect(box.state).toBe("stopped");
      expect(box.reason).toMatch(/exited|stopped/);
      await sleep(2500); // events show about two seconds after they happen
      const events = (await json(await server.api("/v1/events?limit=1000"))).events as any[];
      expect(events.some((e) => e.kind === "box.stopped" && e.box_id === id), JSON.stringify(events.filter((e) => e.box_id === id))).toBe(true);
      const trace = (await json(await server.api(`/v1/boxes/${id}/trace?limit=500`))).entries as any[];
      const stopped = trace.find((e) => e.event === "stopped");
      expect(stopped, JSON.stringify(trace.slice(-5))).toBeTruthy();
      expect(JSON.stringify(stopped)).toMatch(/reason/);
      // A crash is no restart: the box stopped, and `stopped` says so (browser-restarts.server.ts).
      expect(trace.filter((e) => e.event.startsWith("browser_")), JSON.stringify(trace.slice(-5))).toEqual([]);
      expect(events.filter((e) => e.box_id === id && e.kind.startsWith("screen.browser_"))).toEqual([]);
    } finally {
      await remove(id);
    }
  }, 120_000);
});

describe("the idle timeout", () => {
  it("does not remove a box driven over CDP", async () => {
    const id = await newBox({ idle_timeout_secs: 60 });
    let ws: WebSocket | undefined;
    try {
      const cdp = await json(await server.api(`/v1/boxes/${id}/cdp`, { method: "POST" }));
      ws = new WebSocket(cdp.ws_url);
      await new Promise((resolve, reject) => (ws!.once("open", resolve), ws!.once("error", reject)));
      let closed: number | undefined;
      ws.on("close", (code) => (closed = code));
      let n = 0;
      let answered = 0;
      ws.on("message", () => answered++);
      const t0 = Date.now();
      while (Date.now() - t0 < 75_000 && closed === undefined) {
        ws.send(JSON.stringify({ id: ++n, method: "Browser.getVersion" }));
        await sleep(5000);
      }
      expect(closed).toBeUndefined();
      expect(answered).toBeGreaterThan(10);
      const box = await json(await server.api(`/v1/boxes/${id}`));
      expect(box.state, JSON.stringify(box)).toBe("ready");
    } finally {
      ws?.close();
      await remove(id);
    }
  }, 150_000);
});
