import { afterAll, describe, expect, it } from "vitest";
import { type TestServer, docker, json, removeTestBoxes, startServer } from "../support/server";

// A box runs in the runtime, not in the server: a restarted server takes it back.

const servers: TestServer[] = [];

afterAll(async () => {
  for (const s of servers) await s.stop();
  await removeTestBoxes();
});

describe("restart adoption", () => {
  it("memory store: a new server finds the box by its labels and serves it", async () => {
    const first = await startServer({ HOLM_STORAGE_BACKEND: "memory" });
    servers.push(first);
    const box = await json(await first.api("/v1/boxes", { method: "POST", json: { placement: { expires_after_secs: 1800 } } }));
    expect(box.state).toBe("ready");
    await first.stop("SIGTERM");
    expect((await docker.getContainer(`holm-${box.id}`).inspect()).State.Running).toBe(true);

    const second = await first.restart();
    servers.push(second);
    const back = await json(await second.api(`/v1/boxes/${box.id}`));
    expect(back).toMatchObject({
      id: box.id,
      state: "ready",
      spec_digest: box.spec_digest,
      created_at_ms: box.created_at_ms,
      expires_at_ms: box.expires_at_ms,
      placement: { expires_after_secs: 1800 },
    });
    expect(second.logs()).toMatch(/1 adopted/);
    // And it still drives the box's lifecycle.
    const paused = await json(await second.api(`/v1/boxes/${box.id}/pause`, { method: "POST" }));
    expect(paused.state).toBe("paused");
    await second.stop("SIGKILL");

    // A paused box is taken back as paused, even after an unclean stop.
    const third = await second.restart();
    servers.push(third);
    expect((await json(await third.api(`/v1/boxes/${box.id}`))).state).toBe("paused");
    const resumed = await json(await third.api(`/v1/boxes/${box.id}/resume`, { method: "POST" }));
    expect(resumed.state).toBe("ready");
  });

  it("local store: the record survives, and a box the runtime lost is forgotten", async () => {
    const first = await startServer({ HOLM_STORAGE_BACKEND: "local" });
    servers.push(first);
    const kept = await json(await first.api("/v1/boxes", { method: "POST", json: {} }));
    const lost = await json(await first.api("/v1/boxes", { method: "POST", json: {} }));
    const removed = await json(await first.api("/v1/boxes", { method: "POST", json: {} }));
    await first.api(`/v1/boxes/${removed.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    await first.stop("SIGKILL");
    await docker.getContainer(`holm-${lost.id}`).remove({ force: true });

    const second = await first.restart();
    servers.push(second);
    expect((await json(await second.api(`/v1/boxes/${kept.id}`))).state).toBe("ready");
    const gone = await second.api(`/v1/boxes/${lost.id}`);
    expect(gone.status).toBe(410);
    expect((await json(gone)).message).toMatch(/runtime no longer has/);
    expect((await second.api(`/v1/boxes/${removed.id}`)).status).toBe(410);
    expect(second.logs()).toMatch(/0 adopted/);
  });
});
