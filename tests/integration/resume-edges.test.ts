import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleClient } from "../support/console";
import { type TestServer, docker, json, removeTestBoxes, startServer } from "../support/server";
import { apiAs } from "../support/workspaces";

// Resume of a stopped box, where it cannot simply start its container again: the container was
// removed behind holm's back (410 gone, as the reaper would say, never 500), or the server is
// at HOLM_MAX_LIVE_BOXES (503 unavailable, retryable, the box stays stopped: a resume brings back
// a container as a create does, and is admitted the same way, ADR 0016).

let server: TestServer;

beforeAll(async () => {
  // The reaper does not come by during a test: what the test sees is what resume did.
  server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_SERVER_REAP_SECS: "600", HOLM_MAX_LIVE_BOXES: "1" });
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

async function newBox(): Promise<any> {
  const res = await server.api("/v1/boxes", { method: "POST", json: {} });
  const box = await json(res);
  expect(res.status, JSON.stringify(box)).toBe(200);
  return box;
}

const remove = (id: string) => server.api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });

async function stop(id: string) {
  const res = await server.api(`/v1/boxes/${id}/stop`, { method: "POST" });
  const box = await json(res);
  expect(res.status, JSON.stringify(box)).toBe(200);
  expect(box.state).toBe("stopped");
}

describe("a box whose container is removed behind holm's back", () => {
  it("is gone within moments (the engine's news of the removal), not stopped until the reaper comes by", async () => {
    const box = await newBox();
    try {
      await docker.getContainer(`holm-${box.id}`).remove({ force: true });
      let last: { status: number; body: any } | undefined;
      for (const until = Date.now() + 8000; Date.now() < until; await new Promise((r) => setTimeout(r, 250))) {
        const res = await server.api(`/v1/boxes/${box.id}`);
        last = { status: res.status, body: await json(res) };
        if (last.status === 410) break;
      }
      expect(last?.status, JSON.stringify(last?.body)).toBe(410);
      expect(last?.body.message).toMatch(/the runtime no longer has the box/);
    } finally {
      await remove(box.id);
    }
  }, 120_000);
});

describe("resume of a stopped box", () => {
  it("whose container was removed answers 410 gone and the box is gone, as the reaper would mark it", async () => {
    const box = await newBox();
    try {
      await stop(box.id);
      await docker.getContainer(`holm-${box.id}`).remove({ force: true });
      const res = await server.api(`/v1/boxes/${box.id}/resume`, { method: "POST" });
      const out = await json(res);
      expect(res.status, JSON.stringify(out)).toBe(410);
      expect(out.code).toBe("gone");
      // Whether the engine's news of the removal or the resume found it first.
      expect(out.message).toMatch(/(is gone|was removed): the runtime no longer has the box/);
      // The box itself says so too, and leaves the list.
      const after = await server.api(`/v1/boxes/${box.id}`);
      expect(after.status).toBe(410);
      expect((await json(after)).message).toMatch(/the runtime no longer has the box/);
      const list = await json(await server.api("/v1/boxes"));
      expect(list.boxes.map((b: any) => b.id)).not.toContain(box.id);
      const events = ((await json(await server.api("/v1/events?limit=1000"))).events as any[]).filter((e) => e.box_id === box.id);
      expect(events.map((e) => e.kind)).toContain("box.unreachable");
      expect(server.logs()).not.toMatch(/"internal error"/);
    } finally {
      await remove(box.id);
    }
  }, 120_000);

  it("from the console's Resume button, says the box is gone on the page rather than an error page", async () => {
    const c = consoleClient(server);
    const ada = await c.signUp("ada@example.com", "A");
    const asAda = apiAs(server, (await c.createKey(ada, "agents")).secret);
    const created = await asAda("/v1/boxes", { method: "POST", json: {} });
    const box = await json(created);
    expect(created.status, JSON.stringify(box)).toBe(200);
    try {
      expect((await asAda(`/v1/boxes/${box.id}/stop`, { method: "POST" })).status).toBe(200);
      // The page is open when the container goes; then Resume is pressed.
      const csrf = c.csrfIn(await c.page(ada, `/boxes/${box.id}`));
      await docker.getContainer(`holm-${box.id}`).remove({ force: true });
      const res = await c.form(ada, `/boxes/${box.id}`, { intent: "resume", csrf });
      const html = await res.text();
      expect(res.status).toBe(400);
      // Whether the engine's news of the removal or the resume found it first (the same words).
      expect(html).toMatch(new RegExp(`box ${box.id} (is gone|was removed): the runtime no longer has the box`));
      // Seen again, the page is the removed box's.
      expect(await c.page(ada, `/boxes/${box.id}`)).toMatch(/no longer has the box/);
    } finally {
      await remove(box.id);
    }
  }, 120_000);

  it("is refused with 503 unavailable at HOLM_MAX_LIVE_BOXES, and the box stays stopped", async () => {
    const b = await newBox();
    let c: any;
    try {
      await stop(b.id);
      // A stopped box holds no place: another box is admitted.
      c = await newBox();
      const res = await server.api(`/v1/boxes/${b.id}/resume`, { method: "POST" });
      const out = await json(res);
      expect(res.status, JSON.stringify(out)).toBe(503);
      expect(out).toMatchObject({ code: "unavailable", retryable: true });
      expect(out.message).toMatch(/HOLM_MAX_LIVE_BOXES=1/);
      expect((await json(await server.api(`/v1/boxes/${b.id}`))).state).toBe("stopped");
      expect((await docker.getContainer(`holm-${b.id}`).inspect()).State.Running).toBe(false);
      // Once the other box is removed, the resume goes through.
      expect((await remove(c.id)).status).toBe(200);
      c = undefined;
      const again = await server.api(`/v1/boxes/${b.id}/resume`, { method: "POST" });
      const resumed = await json(again);
      expect(again.status, JSON.stringify(resumed)).toBe(200);
      expect(resumed.state).toBe("ready");
    } finally {
      if (c) await remove(c.id);
      await remove(b.id);
    }
  }, 180_000);
});
