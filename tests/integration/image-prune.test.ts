import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, docker, json, startServer } from "../support/server";
import { openStore } from "../support/store";

// Pruning old box images (ADR 0017) with a real engine and a real server, on images this file
// makes itself so nothing real is ever touched: each is an empty image (no layer, so nothing to
// build or pull) loaded with `docker load` under a `holm-x11:`/`holm-base:` tag, with the date
// the test gives it. The server's grace is 1,500 days and the "old" images are from 2020: every
// real image on this machine is far younger, so only the test's own can be pruned.

const RUN = randomBytes(4).toString("hex");
const tag = (repo: "holm-x11" | "holm-base", n: number) => `${repo}:${RUN}0000000${n}`;
const OLD = "2020-01-02T00:00:00Z";
const YOUNG = "2024-01-02T00:00:00Z"; // within 1,500 days of now

const images = {
  old: tag("holm-x11", 1),
  oldBase: tag("holm-base", 2),
  young: tag("holm-x11", 3),
  container: tag("holm-x11", 4),
  box: tag("holm-x11", 5),
  building: tag("holm-x11", 6),
};
const created: Record<string, string> = { young: YOUNG };

let server: TestServer;
let containerId = "";
const cron = randomBytes(24).toString("hex");

/** Loads an empty image under `image`, created at `at`. */
function load(image: string, at: string) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-prune-"));
  const config = JSON.stringify({
    architecture: "amd64",
    os: "linux",
    created: at,
    config: { Labels: { "holm.image": "x11", "holm.test": `prune-${image}` } },
    rootfs: { type: "layers", diff_ids: [] },
    history: [],
  });
  const name = `${createHash("sha256").update(config).digest("hex")}.json`;
  fs.writeFileSync(path.join(dir, name), config);
  fs.writeFileSync(path.join(dir, "manifest.json"), JSON.stringify([{ Config: name, RepoTags: [image], Layers: [] }]));
  execFileSync("tar", ["cf", `${dir}.tar`, "-C", dir, "."]);
  execFileSync("docker", ["load", "-i", `${dir}.tar`], { stdio: "ignore" });
  fs.rmSync(dir, { recursive: true });
  fs.rmSync(`${dir}.tar`);
}

async function present(image: string): Promise<boolean> {
  return docker
    .getImage(image)
    .inspect()
    .then(() => true)
    .catch(() => false);
}

function store() {
  const db = openStore(server);
  db.pragma("busy_timeout = 5000");
  return db;
}

beforeAll(async () => {
  for (const [k, image] of Object.entries(images)) load(image, created[k] ?? OLD);
  // A container the store does not know (another server's, say): the engine refuses to remove its image.
  const c = await docker.createContainer({ Image: images.container, Cmd: ["/none"], Labels: { "holm.test": `prune-${RUN}` } });
  containerId = c.id;
  server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_SERVER_SCHEDULE: "external", CRON_SECRET: cron, HOLM_IMAGE_PRUNE_AFTER: "1500d" });
  const db = store();
  const now = Date.now();
  const row = db.prepare("insert into image (runtime, digest, image, state, reason, request_json, spec_digest, owner, created_at_ms, built_at_ms) values ('docker', ?, ?, ?, null, ?, null, null, ?, ?)");
  const digest = (image: string) => image.slice(image.indexOf(":") + 1);
  // An image row of an old build (what a launch of an earlier version recorded) and one under way.
  row.run(digest(images.old), images.old, "built", JSON.stringify({ features: [], packages: [`prune-${RUN}`] }), now, now);
  row.run(digest(images.building), images.building, "building", JSON.stringify({ features: [], packages: [`prune-${RUN}-b`] }), now, null);
  // A stopped box (not removed) that runs an old image.
  db.prepare(
    "insert into box (id, owner, runtime, runtime_ref, spec_digest, spec_json, placement_json, image, state, reason, screens, width, height, persistent, created_at_ms, expires_at_ms, idle_timeout_secs, last_used_ms, removed_at_ms) values (?, null, 'docker', null, 'x', ?, '{}', ?, 'stopped', null, 1, 1280, 800, 0, ?, ?, null, ?, null)",
  ).run(`box_${RUN}${"0".repeat(24)}`, JSON.stringify({ desktop: { features: [], packages: [] } }), images.box, now, now + 86_400_000, now);
  db.close();
});

afterAll(async () => {
  await server?.stop();
  if (containerId) await docker.getContainer(containerId).remove({ force: true }).catch(() => {});
  for (const image of Object.values(images)) await docker.getImage(image).remove({ force: true }).catch(() => {});
});

describe("prune removes old box images", () => {
  it("removes old tags no spec, box or build wants (x11 and base), with image.removed; keeps young ones, one a box row runs, one building, and one a container uses", async () => {
    for (const image of Object.values(images)) expect(await present(image), image).toBe(true);
    const res = await fetch(`${server.base}/v1/jobs/prune`, { method: "POST", headers: { authorization: `Bearer ${cron}` } });
    expect(res.status).toBe(200);
    // The answer stays the seed's.
    expect(Object.keys(await json(res)).sort()).toEqual(["boxes", "entries", "frames"]);

    expect(await present(images.old)).toBe(false);
    expect(await present(images.oldBase)).toBe(false);
    expect(await present(images.young)).toBe(true);
    expect(await present(images.container)).toBe(true);
    expect(await present(images.box)).toBe(true);
    expect(await present(images.building)).toBe(true);

    // Its row is gone from the list; the event says so, and that prune did it.
    const listed = (await json(await server.api("/v1/images"))).images.map((i: any) => i.image);
    expect(listed).not.toContain(images.old);
    expect(listed).toContain(images.building);
    const events = (await json(await server.api("/v1/events?limit=1000"))).events.filter((e: any) => e.kind === "image.removed");
    expect(events.map((e: any) => e.data.image).sort()).toEqual([images.oldBase, images.old].sort());
    for (const e of events) expect(e).toMatchObject({ runtime: "docker", data: { pruned: true, by: "server" } });
    expect(server.logs()).not.toMatch(/pruning old images failed/);

    // Idempotent: nothing more to remove, the container's image is still kept.
    await fetch(`${server.base}/v1/jobs/prune`, { headers: { authorization: `Bearer ${cron}` } });
    expect(await present(images.container)).toBe(true);
    expect(await present(images.young)).toBe(true);
  });
});
