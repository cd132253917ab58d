import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, docker, json, removeTestBoxes, startServer } from "../support/server";
import { SITE, serveSite } from "../support/site";
import { until } from "../support/until";

// What a browser profile keeps across a box's stop, and how big it may get (ADR 0025), on real
// boxes: a cookie set moments before `POST …/stop` is there after `…/resume` and in the next box
// (Chromium writes cookies out every 30 s and when it closes, so a stop closes it first); a
// profile's size is measured when a box lets it go, listed, and one over HOLM_PROFILE_MAX_BYTES
// is refused at launch rather than growing on the host's disk.

/** Small, so the test writes a modest amount; a fresh Chromium profile is a few MB. */
const MAX_BYTES = 40 * 1024 * 1024;

let server: TestServer;
const volumes = new Set<string>();

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_PROFILE_MAX_BYTES: String(MAX_BYTES) });
}, 120_000);

afterAll(async () => {
  console.log((server?.logs() ?? "").split("\n").filter((l) => /profile|before removing|before stopping/.test(l)).join("\n"));
  await server?.stop();
  await removeTestBoxes();
  for (const v of volumes) await docker.getVolume(v).remove().catch(() => undefined);
});

async function launch(profile: string): Promise<{ status: number; box: any }> {
  const res = await server.api("/v1/boxes", { method: "POST", json: { placement: { profile } } });
  const box = await json(res);
  if (res.status === 200) {
    const info = await docker.getContainer(`holm-${box.id}`).inspect();
    for (const m of info.Mounts ?? []) if (m.Name?.startsWith("holm-profile-")) volumes.add(m.Name);
  }
  return { status: res.status, box };
}

async function call(path: string, method = "POST", body?: unknown): Promise<any> {
  const res = await server.api(path, { method, json: body, headers: method === "DELETE" ? { "x-holm-confirm-delete": "true" } : {} });
  const out = await json(res);
  expect(res.status, JSON.stringify(out).slice(0, 500)).toBe(200);
  return out;
}

async function cookies(id: string): Promise<Record<string, string>> {
  const body = await call(`/v1/boxes/${id}/cookies?url=${encodeURIComponent(SITE)}`, "GET");
  return Object.fromEntries(body.cookies.map((c: any) => [c.name, c.value]));
}

async function profile(name: string): Promise<any> {
  return (await call("/v1/profiles", "GET")).profiles.find((p: any) => p.name === name);
}

const day = () => Math.floor(Date.now() / 1000) + 86_400;

describe("browser profiles across stops, and their size", () => {
  it("a cookie set just before a stop is there after the resume and in the next box; the stop is the user's, not 'on its own'", async () => {
    const { status, box } = await launch("stop35");
    expect(status, JSON.stringify(box)).toBe(200);
    await serveSite(server, box.id);
    await call(`/v1/boxes/${box.id}/cookies`, "POST", { url: SITE, cookies: [{ name: "fresh", value: "set-before-stop", expires: day() }] });
    expect(await cookies(box.id)).toMatchObject({ fresh: "set-before-stop" });
    expect(await call(`/v1/boxes/${box.id}/stop`)).toMatchObject({ state: "stopped" });
    // The box's exit is seen by the server's watcher within moments: it must not call it its own.
    await new Promise((r) => setTimeout(r, 2000));
    const stopped = await call(`/v1/boxes/${box.id}`, "GET");
    expect(stopped.state).toBe("stopped");
    expect(stopped.reason ?? "").not.toMatch(/on its own/);

    expect(await call(`/v1/boxes/${box.id}/resume`)).toMatchObject({ state: "ready" });
    expect(await cookies(box.id)).toMatchObject({ fresh: "set-before-stop" });
    // Measured when the box let the profile go (its stop).
    expect((await profile("stop35")).size_bytes).toBeGreaterThan(0);

    // A paused box's stop wakes it, so its browser closes too.
    await call(`/v1/boxes/${box.id}/cookies`, "POST", { url: SITE, cookies: [{ name: "paused", value: "set-before-pause", expires: day() }] });
    expect(await call(`/v1/boxes/${box.id}/pause`)).toMatchObject({ state: "paused" });
    expect(await call(`/v1/boxes/${box.id}/stop`)).toMatchObject({ state: "stopped" });
    expect(await call(`/v1/boxes/${box.id}/resume`)).toMatchObject({ state: "ready" });
    expect(await cookies(box.id)).toMatchObject({ fresh: "set-before-stop", paused: "set-before-pause" });
    // Each stop closed screen 0's browser itself, and the box logged it as a quit it started
    // again: the stop's, not a restart for the trace (browser-restarts.server.ts).
    const { entries } = await call(`/v1/boxes/${box.id}/trace?limit=500`, "GET");
    expect(entries.filter((e: any) => e.event.startsWith("browser_")), JSON.stringify(entries.map((e: any) => e.event))).toEqual([]);
    await call(`/v1/boxes/${box.id}`, "DELETE");

    const next = await launch("stop35");
    expect(next.status, JSON.stringify(next.box)).toBe(200);
    expect(await cookies(next.box.id)).toMatchObject({ fresh: "set-before-stop", paused: "set-before-pause" });
    await call(`/v1/boxes/${next.box.id}`, "DELETE");
  }, 300_000);

  it("a profile over HOLM_PROFILE_MAX_BYTES is listed with its size and refused at launch (409, naming size, bound and the way out)", async () => {
    const { status, box } = await launch("big");
    expect(status, JSON.stringify(box)).toBe(200);
    // What a page storing blobs leaves in the profile: 50 MB of files in its directory.
    const fill = await call(`/v1/boxes/${box.id}/exec`, "POST", {
      argv: ["sh", "-c", "head -c 52428800 /dev/urandom > /root/.config/holm/chromium-0/filler && sync"],
      timeout_ms: 30_000,
    });
    expect(fill.code, fill.stderr).toBe(0);
    await call(`/v1/boxes/${box.id}`, "DELETE");

    const listed = await profile("big");
    expect(listed.size_bytes).toBeGreaterThan(50 * 1024 * 1024);
    const refused = await server.api("/v1/boxes", { method: "POST", json: { placement: { profile: "big" } } });
    const body = await json(refused);
    expect(refused.status, JSON.stringify(body)).toBe(409);
    expect(body).toMatchObject({ code: "denied", retryable: false });
    expect(body.message).toContain(String(listed.size_bytes));
    expect(body.message).toContain(String(MAX_BYTES));
    expect(body.message).toMatch(/DELETE \/v1\/profiles\/big/);
    // Nothing was made for it, and the way out works: deleted, the name launches fresh.
    expect((await call("/v1/boxes", "GET")).boxes).toHaveLength(0);
    await call("/v1/profiles/big", "DELETE");
    const again = await launch("big");
    expect(again.status, JSON.stringify(again.box)).toBe(200);
    await call(`/v1/boxes/${again.box.id}`, "DELETE");
    expect((await profile("big")).size_bytes).toBeLessThan(MAX_BYTES);
  }, 300_000);

  it("a profile is measured even when its box goes while screen 0's browser waits out its kiosk pause (quit six times within a minute): over the bound, refused at launch", async () => {
    const { status, box } = await launch("looped");
    expect(status, JSON.stringify(box)).toBe(200);
    const fill = await call(`/v1/boxes/${box.id}/exec`, "POST", {
      argv: ["sh", "-c", "head -c 52428800 /dev/urandom > /root/.config/holm/chromium-0/filler && sync"],
      timeout_ms: 30_000,
    });
    expect(fill.code, fill.stderr).toBe(0);
    // Screen 0's browser quits six times (a TERM from inside the box, which Chromium answers by
    // quitting, as it does ctrl+w on its last tab), each once the one started again answers.
    const logs = async () => (await docker.getContainer(`holm-${box.id}`).logs({ stdout: true, stderr: true })).toString("utf8");
    const tabs = async () => (await call(`/v1/boxes/${box.id}/pages`, "GET")).tabs as unknown[];
    for (let i = 1; i <= 6; i++) {
      await until(`screen 0's browser up before quit ${i}`, tabs, (t) => t.length === 1, 30_000);
      const quit = await call(`/v1/boxes/${box.id}/exec`, "POST", {
        argv: ["sh", "-c", "kill -TERM $(ps -eo pid=,ppid=,args= | awk '$2 == 1 && / --remote-debugging-port=9222 / { print $1 }')"],
        timeout_ms: 10_000,
      });
      expect(quit.code, quit.stderr).toBe(0);
      await until(`quit ${i} seen by the box`, logs, (l) => (l.match(/chromium :99 quit \(status 0\)/g) ?? []).length === i, 20_000);
    }
    expect(await logs()).toMatch(/so again in \d+ s/);
    await call(`/v1/boxes/${box.id}`, "DELETE");

    // Its size was measured as the box went (there was no browser to close first).
    const listed = await profile("looped");
    expect(listed.size_bytes, JSON.stringify(listed)).toBeGreaterThan(50 * 1024 * 1024);
    const refused = await server.api("/v1/boxes", { method: "POST", json: { placement: { profile: "looped" } } });
    expect(refused.status, JSON.stringify(await json(refused))).toBe(409);
    await call("/v1/profiles/looped", "DELETE");
  }, 300_000);
});
