import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, RUN_LABEL, type TestServer, docker, json, removeTestBoxes, startServer } from "../support/server";

// Seed 000's images API (ADR 0017) with real builds on the local engine, in both job modes. Each
// server gets its own copy of the agent bundle (HOLM_AGENT_BUNDLE) with a line of its own, so its
// image tag is new while every layer but the last is the engine's cache: a real build of about a
// second that fetches nothing. Every image built here is removed here.

const execFileP = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const made = new Set<string>();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "holm-images-"));

/** A copy of the agent bundle that differs by one comment: a new image tag, cheap to build. */
function variantBundle(name: string, salt = randomBytes(8).toString("hex")): string {
  const file = path.join(tmp, `${name}.mjs`);
  fs.writeFileSync(file, `${fs.readFileSync(path.join(ROOT, "build/agent/agent.mjs"), "utf8")}\n// holm images test ${RUN_LABEL} ${salt}\n`);
  return file;
}

const imageExists = async (ref: string) => Boolean(await docker.getImage(ref).inspect().catch(() => null));

async function events(server: TestServer, kind: string): Promise<any[]> {
  return (await json(await server.api("/v1/events?limit=1000"))).events.filter((e: { kind: string }) => e.kind === kind);
}

/** Events show about two seconds after they happen (000): waits for `n` of a kind. */
async function eventsUntil(server: TestServer, kind: string, n: number, match: (e: any) => boolean): Promise<any[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = (await events(server, kind)).filter(match);
    if (found.length >= n || Date.now() > deadline) return found;
    await sleep(200);
  }
}

afterAll(async () => {
  await removeTestBoxes();
  // Only the images this file built (their tags came back from its own requests).
  for (const ref of made) await docker.getImage(ref).remove().catch(() => undefined);
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe("images, inline jobs (HOLM_SERVER_JOBS=inline)", () => {
  let server: TestServer;
  let built: { runtime: string; image: string; spec_digest: string; digest: string };
  let box: string;

  beforeAll(async () => {
    server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_AGENT_BUNDLE: variantBundle("inline") });
  });
  afterAll(async () => {
    if (box) await server.api(`/v1/boxes/${box}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } }).catch(() => undefined);
    await server?.stop();
  });

  it("POST /v1/runtimes/docker/image builds the image before need: {runtime, image, spec_digest}, and image.built", async () => {
    const res = await server.api("/v1/runtimes/docker/image", { method: "POST", json: { spec: {} } });
    built = await json(res);
    expect(res.status, JSON.stringify(built)).toBe(200);
    made.add(built.image);
    expect(built).toEqual({ runtime: "docker", image: expect.stringMatching(/^holm-x11:[0-9a-f]{16}$/), spec_digest: expect.stringMatching(/^[0-9a-f]{64}$/), digest: built.image.split(":")[1] });
    expect(await imageExists(built.image)).toBe(true);
    const one = await json(await server.api(`/v1/runtimes/docker/images/${built.digest}`));
    expect(one).toMatchObject({ runtime: "docker", digest: built.digest, image: built.image, spec_digest: built.spec_digest, built_at_ms: expect.any(Number), size_bytes: expect.any(Number) });
    expect("state" in one).toBe(false);
    expect((await json(await server.api("/v1/runtimes/docker/images"))).images.map((i: any) => i.digest)).toContain(built.digest);
    expect((await json(await server.api("/v1/images"))).images.map((i: any) => i.digest)).toContain(built.digest);
    const ev = await eventsUntil(server, "image.built", 1, (e) => e.data?.image === built.image);
    expect(ev).toHaveLength(1);
    expect(ev[0]).toMatchObject({ runtime: "docker", data: { image: built.image, digest: built.digest } });
    // Asked again: the same image, nothing built.
    const again = await json(await server.api("/v1/runtimes/docker/image", { method: "POST", json: {} }));
    expect(again).toEqual(built);
  }, 300_000);

  it("`holm images build` prints the image (progress on stderr) and `holm runtimes ls` lists docker", async () => {
    const env = { PATH: process.env.PATH ?? "", HOME: tmp, HOLM_URL: server.base, HOLM_TOKEN: server.token };
    const cli = (...args: string[]) => execFileP(process.execPath, [path.join(ROOT, "build/cli/holm.js"), ...args], { env });
    const b = await cli("images", "build");
    expect(b.stdout.trim()).toBe(built.image);
    expect(b.stderr).toContain("building on docker");
    const ls = await cli("runtimes", "ls");
    expect(ls.stdout).toMatch(/^docker\s+docker\s+yes\s+unix:\/\/\S+\s+launch,screens=8,wayland,persistent,profile,pages,recording,pause,stop,images$/m);
    const images = JSON.parse((await cli("--json", "images", "ls")).stdout).images;
    expect(images.map((i: { digest: string }) => i.digest)).toContain(built.digest);
  }, 60_000);

  it("a box launched with that spec does not build again, and the image cannot be removed while the box uses it", async () => {
    const res = await server.api("/v1/boxes", { method: "POST", json: {} });
    const created = await json(res);
    expect(res.status, JSON.stringify(created)).toBe(200);
    box = created.id;
    expect(created.spec_digest).toBe(built.spec_digest);
    expect(created.start.build).toBeUndefined();
    expect(server.logs()).not.toMatch(new RegExp(`"box":"${box}","line":"building`));
    expect(await eventsUntil(server, "image.built", 2, (e) => e.data?.image === built.image)).toHaveLength(1);
    const refused = await server.api(`/v1/runtimes/docker/images/${built.digest}`, { method: "DELETE" });
    expect(refused.status).toBe(409);
    expect(await json(refused)).toMatchObject({ code: "denied", message: expect.stringContaining(`used by box ${box}`) });
    expect(await imageExists(built.image)).toBe(true);
  }, 300_000);

  it("once the box is gone, DELETE removes the image from the engine, with image.removed; then it is 404", async () => {
    const gone = await server.api(`/v1/boxes/${box}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    expect(gone.status).toBe(200);
    const res = await server.api(`/v1/runtimes/docker/images/${built.digest}`, { method: "DELETE" });
    expect(await json(res)).toEqual({ runtime: "docker", digest: built.digest, image: built.image, deleted: true });
    expect(await imageExists(built.image)).toBe(false);
    const ev = await eventsUntil(server, "image.removed", 1, (e) => e.data?.image === built.image);
    expect(ev[0]).toMatchObject({ runtime: "docker", data: { image: built.image, digest: built.digest } });
    const after = await server.api(`/v1/runtimes/docker/images/${built.digest}`);
    expect(after.status).toBe(404);
    expect((await json(after)).code).toBe("not_found");
  }, 120_000);

  it("refuses what is not an image request: unknown keys, an unknown runtime, an unknown digest", async () => {
    const unknown = await server.api("/v1/runtimes/docker/image", { method: "POST", json: { spec: {}, tag: "x" } });
    expect(unknown.status).toBe(400);
    expect((await json(unknown)).message).toContain('unknown key "tag"');
    const inSpec = await server.api("/v1/runtimes/docker/image", { method: "POST", json: { spec: { desktop: { colour: "red" } } } });
    expect(inSpec.status).toBe(400);
    expect((await server.api("/v1/runtimes/nope/image", { method: "POST", json: {} })).status).toBe(404);
    expect((await server.api("/v1/runtimes/nope/images")).status).toBe(404);
    expect((await server.api(`/v1/runtimes/docker/images/${"0".repeat(16)}`)).status).toBe(404);
    expect((await server.api(`/v1/runtimes/docker/images/${"0".repeat(16)}`, { method: "DELETE" })).status).toBe(404);
  });
});

describe("images, queued jobs (HOLM_SERVER_JOBS=queue, HOLM_SERVER_SCHEDULE=external)", () => {
  let server: TestServer;
  let bundle: string;
  const cron = randomBytes(24).toString("hex");
  const run = async () => json(await fetch(`${server.base}/v1/jobs/run`, { method: "POST", headers: { authorization: `Bearer ${cron}` } }));

  beforeAll(async () => {
    bundle = variantBundle("queued");
    server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_SERVER_JOBS: "queue", HOLM_SERVER_SCHEDULE: "external", CRON_SECRET: cron, HOLM_AGENT_BUNDLE: bundle });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('answers 202 with state "building" and an empty image; the build waits for /v1/jobs/run and survives a restart', async () => {
    const res = await server.api("/v1/runtimes/docker/image", { method: "POST", json: {} });
    const queued = await json(res);
    expect(res.status, JSON.stringify(queued)).toBe(202);
    expect(queued).toMatchObject({ runtime: "docker", image: "", state: "building", spec_digest: expect.any(String), digest: expect.stringMatching(/^[0-9a-f]{16}$/) });
    const ref = `holm-x11:${queued.digest}`;
    made.add(ref);
    await sleep(2000);
    expect(await json(await server.api(`/v1/runtimes/docker/images/${queued.digest}`))).toMatchObject({ state: "building" });
    expect(await imageExists(ref)).toBe(false);

    // A restart before any scheduler call: the build is still there, and queued again.
    await server.stop();
    server = await server.restart();
    // (The log reaches this process a moment after the server answers.)
    for (let i = 0; i < 50 && !/image build\(s\) from before the restart/.test(server.logs()); i++) await sleep(100);
    expect(server.logs()).toMatch(/1 image build\(s\) from before the restart queued again/);
    expect(await json(await server.api(`/v1/runtimes/docker/images/${queued.digest}`))).toMatchObject({ state: "building" });
    expect(await imageExists(ref)).toBe(false);

    expect(await run()).toEqual({ ran: 1 });
    const one = await json(await server.api(`/v1/runtimes/docker/images/${queued.digest}`));
    expect("state" in one, JSON.stringify(one)).toBe(false);
    expect(one).toMatchObject({ image: ref, built_at_ms: expect.any(Number) });
    expect(await imageExists(ref)).toBe(true);
    expect(await eventsUntil(server, "image.built", 1, (e) => e.data?.image === ref)).toHaveLength(1);
    expect(await run()).toEqual({ ran: 0 });

    const del = await server.api(`/v1/runtimes/docker/images/${queued.digest}`, { method: "DELETE" });
    expect((await json(del)).deleted).toBe(true);
    expect(await imageExists(ref)).toBe(false);
  }, 300_000);

  it("a build that fails is `failed` with the reason; asked again, it builds", async () => {
    // A new tag (the bundle changed), whose bundle is gone by the time the job runs.
    variantBundle("queued", "second");
    const res = await server.api("/v1/runtimes/docker/image", { method: "POST", json: {} });
    const queued = await json(res);
    expect(res.status).toBe(202);
    const ref = `holm-x11:${queued.digest}`;
    made.add(ref);
    const kept = fs.readFileSync(bundle);
    fs.rmSync(bundle);
    expect(await run()).toEqual({ ran: 1 });
    const failed = await json(await server.api(`/v1/runtimes/docker/images/${queued.digest}`));
    expect(failed).toMatchObject({ state: "failed", reason: expect.stringMatching(/agent bundle .* is missing/) });
    expect((await json(await server.api("/v1/images"))).images.find((i: any) => i.digest === queued.digest)).toMatchObject({ state: "failed" });

    fs.writeFileSync(bundle, kept);
    const retry = await server.api("/v1/runtimes/docker/image", { method: "POST", json: {} });
    expect(retry.status).toBe(202);
    expect((await json(retry)).digest).toBe(queued.digest);
    expect(await run()).toEqual({ ran: 1 });
    const one = await json(await server.api(`/v1/runtimes/docker/images/${queued.digest}`));
    expect("state" in one, JSON.stringify(one)).toBe(false);
    expect("reason" in one).toBe(false);
    expect((await json(await server.api(`/v1/runtimes/docker/images/${queued.digest}`, { method: "DELETE" }))).deleted).toBe(true);
  }, 300_000);
});
