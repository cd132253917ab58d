import { afterAll, expect, it } from "vitest";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { twoWorkspaces } from "../support/workspaces";

// The warm pool on the local store (ADR 0014): the row is the truth, so after kill -9 a claimed
// box keeps its owner and name, and the pool box waiting beside it goes back in the pool (the
// memory store, whose restart keeps only the containers, is pool.test.ts).

let server: TestServer;

afterAll(async () => {
  await server?.stop("SIGKILL");
  await removeTestBoxes();
});

/** Waits for `re` in the server's log after `from` (its length then). */
async function logged(re: RegExp, from = 0) {
  for (let i = 0; i < 600 && !re.test(server.logs().slice(from)); i++) await new Promise((r) => setTimeout(r, 100));
  expect(server.logs().slice(from)).toMatch(re);
}

it("local store: after kill -9 a claimed box keeps its owner, the pool box comes back and is claimed once", async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_POOL: "default=1", HOLM_POOL_MAX_MEMORY: "4g" });
  const w = await twoWorkspaces(server);
  await logged(/pool: box_\w+ ready \(1 of 1 default\)/);
  const mark = server.logs().length;
  const box = await json(await w.asA("/v1/boxes", { method: "POST", json: { metadata: { name: "kept" } } }));
  expect(box).toMatchObject({ state: "ready", name: "kept" });
  await logged(/pool: box_\w+ ready \(1 of 1 default\)/, mark);
  await server.stop("SIGKILL");
  server = await server.restart();
  expect(server.logs()).toMatch(/pool: 1 box\(es\) back in the pool, 0 removed/);
  expect(await json(await w.asA(`/v1/boxes/${box.id}`))).toMatchObject({ id: box.id, owner: box.owner, name: "kept", state: "ready" });
  const next = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
  expect(next.state).toBe("ready");
  expect(next.id).not.toBe(box.id);
  expect(((await json(await w.asA("/v1/boxes"))).boxes as any[]).map((b) => b.id)).toEqual([box.id]);
}, 180_000); // two pool boots and a restart: a busy machine takes a minute
