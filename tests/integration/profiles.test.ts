import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, docker, json, removeTestBoxes, startServer } from "../support/server";
import { SITE, serveSite } from "../support/site";
import { type Api, twoWorkspaces } from "../support/workspaces";

// Browser profiles (`placement.profile`, seed 000/002, issue 18) on real boxes: a box launched
// with a profile starts where the last box with it left off (its cookies, written out by its own
// Chromium); one box holds a profile at a time (409 naming the holder); each workspace has its
// own; a fork never gets one (001); a profile is listed and removed through /v1 (refused while
// held). What a box has is read from the box's own Chromium, not from the route's answer.

let server: TestServer;
let asA: Api;
let asB: Api;
/** Every profile volume a box of this file mounted, removed at the end even when a test fails. */
const volumes = new Set<string>();

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
  ({ asA, asB } = await twoWorkspaces(server));
}, 120_000);

afterAll(async () => {
  // What the server said of the profiles' browsers (closed before each removal, or not).
  console.log((server?.logs() ?? "").split("\n").filter((l) => /profile|before removing/.test(l)).join("\n"));
  await server?.stop();
  await removeTestBoxes();
  for (const v of volumes) await docker.getVolume(v).remove().catch(() => undefined);
});

async function launch(api: Api, placement: Record<string, unknown>): Promise<{ status: number; box: any }> {
  const res = await api("/v1/boxes", { method: "POST", json: { placement } });
  const box = await json(res);
  if (res.status === 200) {
    const info = await docker.getContainer(`holm-${box.id}`).inspect();
    for (const m of info.Mounts ?? []) if (m.Name?.startsWith("holm-profile-")) volumes.add(m.Name);
  }
  return { status: res.status, box };
}

async function remove(api: Api, id: string): Promise<void> {
  const res = await api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
  expect(res.status, await res.clone().text()).toBe(200);
}

/** The cookies screen 0's Chromium sends to the site in the box. */
async function cookies(api: Api, id: string): Promise<Record<string, string>> {
  const res = await api(`/v1/boxes/${id}/cookies?url=${encodeURIComponent(SITE)}`);
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(200);
  return Object.fromEntries(body.cookies.map((c: any) => [c.name, c.value]));
}

const LOGIN = { name: "session", value: "ada-logged-in" };

describe("browser profiles", () => {
  let first: any;

  it("a box launched with a profile holds it: listed with its holder, the placement says so", async () => {
    const { status, box } = await launch(asA, { profile: "work" });
    expect(status, JSON.stringify(box)).toBe(200);
    first = box;
    expect(box).toMatchObject({ state: "ready", placement: { profile: "work" } });
    expect([...volumes]).toHaveLength(1);
    const listed = await json(await asA("/v1/profiles"));
    expect(listed.profiles).toEqual([expect.objectContaining({ name: "work", runtime: "docker", held_by: box.id })]);
    // Logged in: a cookie that outlives the browser (an expiry), as a site's login sets it.
    await serveSite(server, box.id);
    const set = await asA(`/v1/boxes/${box.id}/cookies`, {
      method: "POST",
      json: { url: SITE, cookies: [{ ...LOGIN, expires: Math.floor(Date.now() / 1000) + 86_400 }] },
    });
    expect(set.status, await set.clone().text()).toBe(200);
    expect(await cookies(asA, box.id)).toMatchObject({ [LOGIN.name]: LOGIN.value });
  }, 180_000);

  it("a second box asking for a held profile: 409 denied naming the holder, and nothing made", async () => {
    const before = (await json(await asA("/v1/boxes"))).boxes.length;
    const { status, box } = await launch(asA, { profile: "work" });
    expect(status, JSON.stringify(box)).toBe(409);
    expect(box).toMatchObject({ code: "denied", retryable: true, message: expect.stringContaining(first.id) });
    expect((await json(await asA("/v1/boxes"))).boxes.length).toBe(before);
    // Removing it is refused too while the box holds it.
    const del = await asA("/v1/profiles/work", { method: "DELETE" });
    expect(del.status).toBe(409);
    expect(await json(del)).toMatchObject({ code: "denied", message: expect.stringContaining(first.id) });
  });

  it("another workspace's profile of the same name is its own: free, and without the first one's login", async () => {
    expect((await json(await asB("/v1/profiles"))).profiles).toEqual([]);
    const { status, box } = await launch(asB, { profile: "work" });
    expect(status, JSON.stringify(box)).toBe(200);
    expect(volumes.size).toBe(2);
    await serveSite(server, box.id);
    expect(await cookies(asB, box.id)).not.toHaveProperty(LOGIN.name);
    // Neither workspace sees or removes the other's.
    expect((await asB(`/v1/boxes/${first.id}`)).status).toBe(404);
    await remove(asB, box.id);
  }, 180_000);

  it("a fork never gets the profile (001): not in its placement, not its login; naming one is refused", async () => {
    const refused = await asA(`/v1/boxes/${first.id}/fork`, { method: "POST", json: { placement: { profile: "work" } } });
    expect(refused.status).toBe(400);
    expect(await json(refused)).toMatchObject({ code: "unsupported", message: expect.stringMatching(/profile/) });
    const res = await asA(`/v1/boxes/${first.id}/fork`, { method: "POST", json: {} });
    const out = await json(res);
    expect(res.status, JSON.stringify(out)).toBe(200);
    expect(out.box.placement).not.toHaveProperty("profile");
    await serveSite(server, out.box.id);
    expect(await cookies(asA, out.box.id)).not.toHaveProperty(LOGIN.name);
    await remove(asA, out.box.id);
  }, 180_000);

  it("the next box with the profile starts logged in where the last one left off", async () => {
    await remove(asA, first.id);
    // Its browser was closed for the profile's last writes, and the server saw it end (the box's
    // entrypoint starts a browser that quits again: that must not hold the removal for 8 s).
    // (The server logs JSON: the name's quotes come escaped.)
    expect(server.logs()).toMatch(/browser closed for profile \\"work\\"/);
    expect(server.logs()).not.toMatch(/did not close in \d+ ms; profile \\"work\\"/);
    expect((await json(await asA("/v1/profiles"))).profiles).toEqual([expect.objectContaining({ name: "work", held_by: null })]);
    const { status, box } = await launch(asA, { profile: "work" });
    expect(status, JSON.stringify(box)).toBe(200);
    expect(volumes.size).toBe(2);
    await serveSite(server, box.id);
    expect(await cookies(asA, box.id)).toMatchObject({ [LOGIN.name]: LOGIN.value });
    await remove(asA, box.id);
  }, 180_000);

  it("two boxes asking for a new profile at once: one gets it, the other 409", async () => {
    const both = await Promise.all([launch(asA, { profile: "race" }), launch(asA, { profile: "race" })]);
    expect(both.map((b) => b.status).sort()).toEqual([200, 409]);
    const winner = both.find((b) => b.status === 200)!.box;
    expect((await json(await asA("/v1/profiles"))).profiles.find((p: any) => p.name === "race")).toMatchObject({ held_by: winner.id });
    await remove(asA, winner.id);
  }, 180_000);

  it("a free profile is removed with its files; another workspace's stays; a name never made is 404", async () => {
    const del = await asA("/v1/profiles/work", { method: "DELETE" });
    expect(del.status, await del.clone().text()).toBe(200);
    expect(await json(del)).toEqual({ name: "work", deleted: true });
    expect((await json(await asA("/v1/profiles"))).profiles.map((p: any) => p.name)).toEqual(["race"]);
    expect((await json(await asB("/v1/profiles"))).profiles.map((p: any) => p.name)).toEqual(["work"]);
    // A's volume is gone from the engine, B's is not.
    const left = await Promise.all([...volumes].map(async (v) => (await docker.getVolume(v).inspect().then(() => true, () => false)) && v));
    expect(left.filter(Boolean)).toHaveLength(volumes.size - 1);
    const none = await asA("/v1/profiles/never", { method: "DELETE" });
    expect(none.status).toBe(404);
    expect(await json(none)).toMatchObject({ code: "not_found" });
  });

  it("the seed's create example launches as written (000): its profile, accessibility, audio and all", async () => {
    const example = {
      spec: {
        desktop: { server: "x11", width: 1280, height: 800, screens: 1, features: ["wide_fonts", "video", "dock", "accessibility", "audio"], packages: ["jq"] },
        policy: { network: true },
      },
      placement: { runtime: "docker", memory: "2g", cpus: "2", expires_after_secs: 3600, idle_timeout_secs: 900, profile: "work" },
    };
    const res = await server.api("/v1/boxes", { method: "POST", json: example });
    const box = await json(res);
    expect(res.status, JSON.stringify(box).slice(0, 500)).toBe(200);
    const info = await docker.getContainer(`holm-${box.id}`).inspect();
    for (const m of info.Mounts ?? []) if (m.Name?.startsWith("holm-profile-")) volumes.add(m.Name);
    expect(box).toMatchObject({ state: "ready", placement: example.placement });
    expect(box.spec.desktop.features.sort()).toEqual([...example.spec.desktop.features].sort());
    // The server token's profiles are its own, beside the workspaces' of the same name.
    expect((await json(await server.api("/v1/profiles"))).profiles).toEqual([expect.objectContaining({ name: "work", held_by: box.id })]);
    const jq = await server.api(`/v1/boxes/${box.id}/exec`, { method: "POST", json: { argv: ["jq", "-n", "1+1"] } });
    expect((await json(jq)).stdout.trim()).toBe("2");
    await remove(server.api, box.id);
  }, 600_000);

  it("profiles are kept on the built-in engine only: another runtime answers 404 or 400 before anything is made", async () => {
    const res = await asA("/v1/boxes", { method: "POST", json: { placement: { profile: "work", runtime: "elsewhere" } } });
    expect(res.status).toBe(404);
  });
});
