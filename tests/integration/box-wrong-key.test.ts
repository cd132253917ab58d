import fs from "node:fs";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { apiAs } from "../support/workspaces";
import { consoleClient } from "../support/console";

// Boxes launched under one server key, found by a server with another (a `holm backup --no-key`
// archive restored and started with a fresh secret.key; the containers still run). Their agents
// refuse every request the new server signs, and no retry changes that: the boxes are `failed`
// with why and what to do, their calls answer 409 with `retryable: false`, no viewer ticket is
// issued, and deleting them works. A running box is found so when the server starts; a paused one
// (its agent frozen then) at its first call after it resumes. A pool box (no one's to delete)
// is removed instead, so no one is handed a box the server cannot drive.

let server: TestServer | undefined;
afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

const KEY_WHY = /its agent refuses this server's signature: the server key is not the one that launched it/;

it("a box whose agent refuses the server's signature is failed, says why, and is not retried", async () => {
  const first = await startServer({ HOLM_STORAGE_BACKEND: "local" });
  server = first;
  const c = consoleClient(first);
  const ada = await c.signUp("ada@example.com", "A");
  const key = (await c.createKey(ada, "a")).secret;
  let asA = apiAs(first, key);
  const launch = async () => {
    const box = await json(await asA("/v1/boxes", { method: "POST", json: { spec: { desktop: { features: [] } } } }));
    expect(box.state, JSON.stringify(box)).toBe("ready");
    return box.id as string;
  };
  const running = await launch();
  const paused = await launch();
  expect((await asA(`/v1/boxes/${paused}/pause`, { method: "POST" })).status).toBe(200);

  // The same store under a new server key; the containers run on.
  await first.stop();
  fs.rmSync(path.join(first.stateDir, "secret.key"));
  server = await first.restart();
  asA = apiAs(server, key);

  const stateOf = async (id: string) => json(await asA(`/v1/boxes/${id}`));
  const deadline = Date.now() + 30_000;
  let box = await stateOf(running);
  while (box.state !== "failed" && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    box = await stateOf(running);
  }
  expect(box, JSON.stringify(box)).toMatchObject({ state: "failed", reason: expect.stringMatching(KEY_WHY) });
  expect(box.reason).toMatch(/delete the box, or start the server with the key that launched it/);

  // The console's box page says it started and can no longer be reached, not that it failed to start.
  const html = await consoleClient(server).page(await consoleClient(server).logIn("ada@example.com"), `/boxes/${running}`);
  expect(html).toContain("This box can no longer be reached");
  expect(html).toContain("no call to it can succeed");
  expect(html).not.toContain("failed to start");

  const refusedAsFailed = async (res: Response) => {
    const body = await json(res);
    expect(res.status, JSON.stringify(body)).toBe(409);
    expect(body, JSON.stringify(body)).toMatchObject({ retryable: false, message: expect.stringMatching(KEY_WHY) });
    expect(body.message).not.toMatch(/failed to start|try again/);
  };
  const click = { actions: [{ type: "click", at: { x: 10, y: 10 } }] };
  await refusedAsFailed(await asA(`/v1/boxes/${running}/screens/0/actions`, { method: "POST", json: click }));
  await refusedAsFailed(await asA(`/v1/boxes/${running}/screens/0/viewer/ticket`, { method: "POST", json: {} }));

  // The paused box: its agent is frozen at start, so it is found at its first call after resuming.
  expect((await stateOf(paused)).state).toBe("paused");
  expect((await asA(`/v1/boxes/${paused}/resume`, { method: "POST" })).status).toBe(200);
  await refusedAsFailed(await asA(`/v1/boxes/${paused}/screens/0/actions`, { method: "POST", json: click }));
  expect(await stateOf(paused)).toMatchObject({ state: "failed", reason: expect.stringMatching(KEY_WHY) });
  await refusedAsFailed(await asA(`/v1/boxes/${paused}/screens/0/viewer/ticket`, { method: "POST", json: {} }));

  const events = (await json(await server.api("/v1/events?limit=1000"))).events as { kind: string; box_id?: string; data?: { why?: string } }[];
  for (const id of [running, paused]) {
    expect(events.filter((e) => e.box_id === id && e.kind === "box.failed"), id).toEqual([expect.objectContaining({ data: expect.objectContaining({ why: expect.stringMatching(KEY_WHY) }) })]);
  }
  for (const id of [running, paused]) {
    expect((await asA(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } })).status).toBe(200);
  }
}, 180_000);

it("a pool box whose agent refuses the server's signature is removed at start: the next box is one the server can drive", async () => {
  await server?.stop();
  const first = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_POOL: "default=1", HOLM_POOL_MAX_MEMORY: "4g" });
  server = first;
  const logged = async (re: RegExp, from = 0) => {
    for (let i = 0; i < 600 && !re.test(server!.logs().slice(from)); i++) await new Promise((r) => setTimeout(r, 100));
    expect(server!.logs().slice(from)).toMatch(re);
  };
  await logged(/pool: (box_\w+) ready \(1 of 1 default\)/);
  const pooled = /pool: (box_\w+) ready/.exec(server.logs())![1]!;
  await first.stop();
  fs.rmSync(path.join(first.stateDir, "secret.key"));
  server = await first.restart();
  // The pool is full again either way: with a new box, or (before the fix) with the old one taken back.
  await logged(/pool: box_\w+ ready \(1 of 1 default\)|pool: 1 box\(es\) back in the pool/);
  const box = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  const res = await server.api(`/v1/boxes/${box.id}/screens/0/actions`, { method: "POST", json: { actions: [{ type: "click", at: { x: 10, y: 10 } }] } });
  expect(res.status, JSON.stringify(await res.clone().json())).toBe(200);
  expect(box.id, "the old pool box was handed out").not.toBe(pooled);
}, 180_000);
