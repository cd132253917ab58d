import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RUN_LABEL, type TestServer, docker, json, removeTestBoxes, startServer } from "../support/server";
import { SITE, serveSite } from "../support/site";
import { openStore } from "../support/store";

// Browser profiles where more than one server shares the Docker engine (README: each server
// adopts only its own boxes), on real boxes: two servers' profiles of one name are two profiles,
// not one volume (the server token's used to hash to the same volume on every server: server 2's
// box read server 1's login). Removing a profile whose volume a container still uses is a 409 that
// keeps the profile, not a 500 that lost the row and left the data for the next box; a profile
// stored with a volume name of an earlier version keeps that volume; names made only of dots
// (which no /v1 path can name again) are refused.

let one: TestServer;
let two: TestServer;
/** Every profile volume a box of this file mounted, removed at the end even when a test fails. */
const volumes = new Set<string>();
/** Containers this file made beside the boxes (one that holds a volume), removed at the end. */
const others: string[] = [];

beforeAll(async () => {
  [one, two] = await Promise.all([startServer({ HOLM_STORAGE_BACKEND: "local" }), startServer({ HOLM_STORAGE_BACKEND: "local" })]);
}, 120_000);

afterAll(async () => {
  await Promise.all([one?.stop(), two?.stop()]);
  for (const id of others) await docker.getContainer(id).remove({ force: true }).catch(() => undefined);
  await removeTestBoxes();
  for (const v of volumes) await docker.getVolume(v).remove().catch(() => undefined);
});

/** Launches a box with `profile` and answers it with the profile volume its container mounts. */
async function launch(server: TestServer, profile: string): Promise<{ box: any; volume: string }> {
  const res = await server.api("/v1/boxes", { method: "POST", json: { placement: { profile } } });
  const box = await json(res);
  expect(res.status, JSON.stringify(box)).toBe(200);
  const info = await docker.getContainer(`holm-${box.id}`).inspect();
  const volume = info.Mounts?.find((m) => m.Destination === "/root/.config/holm/chromium-0")?.Name ?? "";
  expect(volume).toMatch(/^holm-profile-/);
  volumes.add(volume);
  return { box, volume };
}

async function remove(server: TestServer, id: string): Promise<void> {
  const res = await server.api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
  expect(res.status, await res.clone().text()).toBe(200);
}

async function cookies(server: TestServer, id: string): Promise<Record<string, string>> {
  const res = await server.api(`/v1/boxes/${id}/cookies?url=${encodeURIComponent(SITE)}`);
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(200);
  return Object.fromEntries(body.cookies.map((c: any) => [c.name, c.value]));
}

const LOGIN = { name: "session", value: "server-one-login" };

describe("browser profiles beside another server on the engine", () => {
  let oneVolume = "";

  it("two servers' profiles of one name are two: the second server's box does not get the first's login", async () => {
    const first = await launch(one, "shared");
    oneVolume = first.volume;
    await serveSite(one, first.box.id);
    const set = await one.api(`/v1/boxes/${first.box.id}/cookies`, {
      method: "POST",
      json: { url: SITE, cookies: [{ ...LOGIN, expires: Math.floor(Date.now() / 1000) + 86_400 }] },
    });
    expect(set.status, await set.clone().text()).toBe(200);
    // Removed: its browser is closed first, so the login is on the volume.
    await remove(one, first.box.id);

    const other = await launch(two, "shared");
    expect(other.volume).not.toBe(oneVolume);
    // `docker volume ls` says whose each is.
    const labels = await Promise.all([oneVolume, other.volume].map(async (v) => (await docker.getVolume(v).inspect()).Labels));
    expect(labels[0]).toMatchObject({ "holm.profile": "shared" });
    expect(labels[1]).toMatchObject({ "holm.profile": "shared" });
    expect(labels[0]["holm.server"]).not.toBe(labels[1]["holm.server"]);
    await serveSite(two, other.box.id);
    expect(await cookies(two, other.box.id)).not.toHaveProperty(LOGIN.name);
    await remove(two, other.box.id);

    // Server one's profile still has its login.
    const again = await launch(one, "shared");
    expect(again.volume).toBe(oneVolume);
    await serveSite(one, again.box.id);
    expect(await cookies(one, again.box.id)).toMatchObject({ [LOGIN.name]: LOGIN.value });
    await remove(one, again.box.id);
  }, 300_000);

  it("removing a profile whose volume a container still uses: 409 saying so, and the profile stays", async () => {
    // A container outside this server's boxes on the volume (another server's, a box whose
    // container removal failed): the engine refuses to remove the volume.
    const image = (await docker.listImages({ filters: { reference: ["holm-x11"] } }))[0]?.Id ?? "alpine";
    const holder = await docker.createContainer({
      Image: image,
      Cmd: ["true"],
      Labels: { "holm.test": RUN_LABEL },
      HostConfig: { Mounts: [{ Type: "volume", Source: oneVolume, Target: "/data" }] },
    });
    others.push(holder.id);
    const refused = await one.api("/v1/profiles/shared", { method: "DELETE" });
    const body = await json(refused);
    expect(refused.status, JSON.stringify(body)).toBe(409);
    expect(body).toMatchObject({ code: "denied", retryable: true, message: expect.stringMatching(/in use by a container/) });
    expect((await json(await one.api("/v1/profiles"))).profiles.map((p: any) => p.name)).toEqual(["shared"]);
    expect(await docker.getVolume(oneVolume).inspect().then(() => true)).toBe(true);

    // Once that container is gone, the removal goes through, with the volume; a size
    // measurement's container left exited by a server that ended mid-measure does not hold it.
    await holder.remove({ force: true });
    const measure = await docker.createContainer({
      Image: image,
      Cmd: ["true"],
      Labels: { "holm.test": RUN_LABEL, "holm.measure": oneVolume },
      HostConfig: { Mounts: [{ Type: "volume", Source: oneVolume, Target: "/p", ReadOnly: true }] },
    });
    others.push(measure.id);
    const done = await one.api("/v1/profiles/shared", { method: "DELETE" });
    expect(done.status, await done.clone().text()).toBe(200);
    expect((await json(await one.api("/v1/profiles"))).profiles).toEqual([]);
    expect(await docker.getVolume(oneVolume).inspect().then(() => true, () => false)).toBe(false);
    expect(await measure.inspect().then(() => true, () => false), "the stale measurement container").toBe(false);
  }, 60_000);

  it("a profile stored with a volume name of its own (an earlier version's) keeps that volume; listed as without data until it has one", async () => {
    // The server token's profiles are stored under the owner "".
    const owner = "";
    const earlier = `holm-profile-test-${RUN_LABEL}-earlier`;
    const db = openStore(two);
    db.prepare("insert into browser_profile (owner, name, runtime, volume, holder, created_at_ms, last_used_ms) values (?, ?, 'docker', ?, null, ?, ?)").run(
      owner,
      "kept",
      earlier,
      Date.now(),
      Date.now(),
    );
    db.close();
    // No such volume on the engine (as after a restore: the archive holds rows, not volumes).
    const listed = async () => (await json(await two.api("/v1/profiles"))).profiles.find((p: any) => p.name === "kept");
    expect(await listed()).toMatchObject({ held_by: null, data_missing: true });
    const { box, volume } = await launch(two, "kept");
    volumes.add(earlier);
    expect(volume).toBe(earlier);
    expect(await listed()).toMatchObject({ held_by: box.id, data_missing: false });
    await remove(two, box.id);
    expect(await listed()).toMatchObject({ held_by: null, data_missing: false });
  }, 180_000);

  it("a profile named only with dots ('.', '..') is refused: no /v1 path could name it to remove it", async () => {
    for (const name of [".", "..", "..."]) {
      const res = await one.api("/v1/boxes", { method: "POST", json: { placement: { profile: name } } });
      const body = await json(res);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(body.message).toContain("placement.profile");
    }
    expect((await json(await one.api("/v1/profiles"))).profiles).toEqual([]);
    // Dots among other characters are still a name.
    const { box } = await launch(one, "v1.2");
    await remove(one, box.id);
  }, 180_000);
});
