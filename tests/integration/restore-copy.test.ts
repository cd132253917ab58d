import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ON_POSTGRES } from "../support/postgres";
import { type TestServer, docker, json, removeTestBoxes, startServer } from "../support/server";
import { holmCli } from "../support/holm-cli";
import { openStore } from "../support/store";

// A backup restored on the host its server still runs on (to test the backup). The store and the
// server key are the original's, so by default a server on the copy is the same server to the
// engine: it takes back the original's boxes and acts on them (what a restore after a loss needs).
// `holm restore` says so; `--as-new-server` makes a copy that leaves them alone, with the browser
// profile volumes and webhook receivers they use. Two real boxes (the first with a profile).

const work = fs.mkdtempSync(path.join(os.tmpdir(), "holm-restore-copy-"));
const archive = path.join(work, "live.tar.gz");
let source: TestServer;
let copy: TestServer | undefined;
let b1: string;
let b2: string;
/** The engine volume of the source's profile "shop", mounted by b1. */
let shopVolume: string;
let webhookId: string;
const hits: string[] = [];
const rx = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    hits.push(req.url ?? "");
    res.end("ok");
  });
});
const volumes = new Set<string>();

function holm(args: string[]) {
  return holmCli(work, args);
}

async function launch(server: TestServer, placement?: { profile: string }): Promise<string> {
  const box = await json(await server.api("/v1/boxes", { method: "POST", json: { spec: { desktop: { features: [] } }, ...(placement ? { placement } : {}) } }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  return box.id;
}

/** The profile volume a box's container mounts (kept to be removed at the end). */
async function profileVolumeOf(id: string): Promise<string> {
  const [found] = await docker.listContainers({ all: true, filters: { label: [`holm.box=${id}`] } });
  const name = found?.Mounts.find((m) => m.Name?.startsWith("holm-profile-"))?.Name;
  if (!name) throw new Error(`box ${id} mounts no profile volume`);
  volumes.add(name);
  return name;
}

const volumeExists = (name: string) => docker.getVolume(name).inspect().then(() => true, () => false);

const remove = (server: TestServer, id: string) => server.api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
const stateOn = async (server: TestServer, id: string) => (await json(await server.api(`/v1/boxes/${id}`))).state;

beforeAll(async () => {
  await new Promise<void>((r) => rx.listen(0, "127.0.0.1", r));
  source = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_STATE_DIR: path.join(work, "src"), HOLM_WEBHOOK_ALLOW_PRIVATE: "1" });
  b1 = await launch(source, { profile: "shop" });
  shopVolume = await profileVolumeOf(b1);
  // A webhook with a delivery due in a few seconds, in the backup; deleted on the source right
  // after, so whatever reaches the receiver then comes from a copy.
  const hook = await json(await source.api("/v1/webhooks", { method: "POST", json: { url: `http://127.0.0.1:${(rx.address() as AddressInfo).port}/hook`, events: ["box.paused"] } }));
  webhookId = hook.id;
  const db = openStore(source);
  db.prepare("insert into webhook_delivery (id, webhook_id, event_seq, kind, body, status, attempts, created_at_ms, next_at_ms) values (?, ?, 1, 'box.paused', '{}', 'pending', 0, ?, ?)")
    .run("whd_000000000000000000000001", webhookId, Date.now(), Date.now() + 5000);
  db.close();
  const ran = await holm(["backup", archive, "--state-dir", source.stateDir]);
  expect(ran.code, ran.stderr).toBe(0);
  expect((await source.api(`/v1/webhooks/${webhookId}`, { method: "DELETE" })).status).toBe(200);
  b2 = await launch(source);
}, 120_000);

afterAll(async () => {
  await copy?.stop();
  await source?.stop();
  await removeTestBoxes();
  for (const v of volumes) await docker.getVolume(v).remove().catch(() => undefined);
  await new Promise((r) => rx.close(r));
  fs.rmSync(work, { recursive: true, force: true });
});

describe.skipIf(ON_POSTGRES)("a backup restored beside its live server", () => {
  it("holm restore says a server on the copy acts on the original's boxes, and how not to", async () => {
    const ran = await holm(["restore", archive, "--state-dir", path.join(work, "after-loss")]);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stderr).toMatch(/warning: a server started on this copy with the same engine takes back and acts on the boxes of the server the backup was taken from/);
    expect(ran.stderr).toMatch(/stop that server first, or restore with --as-new-server/);
  });

  it("--as-new-server: a server on the copy takes none of the original's boxes and cannot remove them", async () => {
    const ran = await holm(["restore", archive, "--state-dir", path.join(work, "test-restore"), "--as-new-server"]);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stderr).toMatch(/restored .*: 1 box/);
    expect(ran.stderr).toMatch(/as a new server: its 1 box recorded live is marked removed here/);
    expect(ran.stderr).not.toMatch(/warning: a server started on this copy/);

    copy = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_STATE_DIR: path.join(work, "test-restore"), HOLM_SERVER_TOKEN: source.token, HOLM_WEBHOOK_ALLOW_PRIVATE: "1" });
    // Let its first reaper sweep run too, and the backed-up delivery come due: it must not act on
    // the original's containers, nor send to the original's receivers.
    await new Promise((r) => setTimeout(r, 6000));
    expect(hits).toEqual([]);
    expect(await json(await copy.api(`/v1/webhooks/${webhookId}`))).toMatchObject({ enabled: false });
    const held = (await json(await copy.api(`/v1/webhooks/${webhookId}/deliveries`))).deliveries;
    expect(held).toEqual([expect.objectContaining({ status: "pending", next_attempt_at_ms: null })]);
    // The original's profile is not the copy's: not listed, not removable, its volume kept.
    expect((await json(await copy.api("/v1/profiles"))).profiles).toEqual([]);
    expect((await copy.api("/v1/profiles/shop", { method: "DELETE" })).status).toBe(404);
    expect(await volumeExists(shopVolume)).toBe(true);
    // And restore said so.
    expect(ran.stderr).toMatch(/its 1 browser profile is dropped here \(its volume stays the original's\)/);
    expect(ran.stderr).toMatch(/its 1 webhook is disabled here/);
    expect(copy.logs()).not.toMatch(/adopted box_/);
    const listed = await json(await copy.api("/v1/boxes"));
    expect(listed.boxes.map((b: any) => b.id)).not.toContain(b2);
    expect(listed.boxes.filter((b: any) => b.state !== "gone").map((b: any) => b.id)).toEqual([]);
    // The box the backup recorded is history here, and says why.
    const gone = await copy.api(`/v1/boxes/${b1}`);
    expect(gone.status).toBe(410);
    expect((await json(gone)).message).toMatch(/restored as a new server/);
    expect((await remove(copy, b2)).status).toBe(404);
    expect((await remove(copy, b1)).status).toBe(410);
    await copy.stop();
    copy = undefined;

    // The original still has both, running.
    expect(await stateOn(source, b1)).toBe("ready");
    expect(await stateOn(source, b2)).toBe("ready");
  }, 90_000);

  it("restored after a loss (the original stopped): a server on the copy takes back both boxes", async () => {
    await source.stop();
    copy = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_STATE_DIR: path.join(work, "after-loss"), HOLM_SERVER_TOKEN: source.token });
    expect(copy.logs()).toContain(`adopted ${b2} (ready) from the docker runtime`);
    expect(await stateOn(copy, b1)).toBe("ready");
    expect(await stateOn(copy, b2)).toBe("ready");
    expect((await remove(copy, b1)).status).toBe(200);
    await copy.stop();
    copy = undefined;
  }, 90_000);

  it("the new server's boxes carry its own id, and its own backup keeps it", async () => {
    const dir = path.join(work, "test-restore");
    const own = fs.readFileSync(path.join(dir, "server-id"), "utf8").trim();
    copy = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_STATE_DIR: dir });
    // A profile of the original's name is the copy's own: another volume, not the original's.
    const c1 = await launch(copy, { profile: "shop" });
    const [found] = await docker.listContainers({ all: true, filters: { label: [`holm.box=${c1}`] } });
    expect(found?.Labels["holm.server"]).toBe(own);
    expect(await profileVolumeOf(c1)).not.toBe(shopVolume);
    const again = path.join(work, "copy.tar.gz");
    expect((await holm(["backup", again, "--state-dir", dir])).code).toBe(0);
    const ran = await holm(["restore", again, "--state-dir", path.join(work, "copy-of-copy")]);
    expect(ran.code, ran.stderr).toBe(0);
    expect(fs.readFileSync(path.join(work, "copy-of-copy", "server-id"), "utf8").trim()).toBe(own);
  }, 90_000);
});
