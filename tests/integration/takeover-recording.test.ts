import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { type Api, twoWorkspaces } from "../support/workspaces";

// Recording whenever a person holds the screen (issue 18), on real boxes: a box whose
// `record_takeovers` is set (PATCH /v1/boxes/{id}, or the box page's switch) records a screen from
// each takeover to its give-back, into the trace; a recording someone else started is neither
// taken over nor stopped; without the `video` feature the setting is refused; another workspace
// cannot set it.

let server: TestServer;
let asA: Api;
let asB: Api;
let console_: Awaited<ReturnType<typeof twoWorkspaces>>["c"];
let ada: Awaited<ReturnType<typeof twoWorkspaces>>["ada"];

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
  ({ asA, asB, c: console_, ada } = await twoWorkspaces(server));
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

async function launch(spec: unknown = {}): Promise<any> {
  const res = await asA("/v1/boxes", { method: "POST", json: { spec } });
  const box = await json(res);
  expect(res.status, JSON.stringify(box)).toBe(200);
  return box;
}

const entries = async (id: string): Promise<any[]> => (await json(await asA(`/v1/boxes/${id}/trace?limit=500`))).entries;
const recording = async (id: string) => json(await asA(`/v1/boxes/${id}/screens/0/recording`));

/** A person takes the screen, or gives it back, through the box page (as the console does). */
async function byPerson(id: string, intent: "takeover" | "giveback") {
  const csrf = console_.csrfIn(await console_.page(ada, `/boxes/${id}`));
  const res = await console_.form(ada, `/boxes/${id}`, { intent, screen: "0", csrf });
  expect(res.status, await res.clone().text()).toBeLessThan(400);
}

describe("recording whenever a person holds the screen", () => {
  let box: any;

  it("is off by default, and PATCH turns it on (the box says so)", async () => {
    box = await launch();
    expect(box.record_takeovers).toBe(false);
    const res = await asA(`/v1/boxes/${box.id}`, { method: "PATCH", json: { record_takeovers: true } });
    const body = await json(res);
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.record_takeovers).toBe(true);
    expect((await json(await asA(`/v1/boxes/${box.id}`))).record_takeovers).toBe(true);
  });

  it("a person's takeover starts a recording at 10 fps; giving back stops it and keeps it in the trace", async () => {
    await byPerson(box.id, "takeover");
    await expect.poll(async () => (await recording(box.id)).recording, { timeout: 10_000 }).toBe(true);
    const running = await recording(box.id);
    expect(running.fps).toBe(10);
    const started = (await entries(box.id)).find((e) => e.event === "recording_started");
    expect(started).toMatchObject({ actor: "person", screen: 0, data: { why: "takeover", path: running.path, fps: 10 } });
    // The person's time on the screen: something to see.
    await new Promise((r) => setTimeout(r, 1500));
    await byPerson(box.id, "giveback");

    await expect.poll(async () => (await entries(box.id)).some((e) => e.event === "recording_stopped"), { timeout: 20_000 }).toBe(true);
    const all = await entries(box.id);
    const stopped = all.find((e) => e.event === "recording_stopped");
    expect(stopped).toMatchObject({ screen: 0, data: { kept: true, path: running.path } });
    // In the order a reader of the trace expects: taken, recorded, given back, kept.
    const seq = (event: string) => all.find((e) => e.event === event)?.seq;
    expect(seq("takeover_started")).toBeLessThan(seq("recording_started"));
    expect(seq("takeover_ended")).toBeLessThan(stopped.seq);
    expect((await recording(box.id)).recording).toBe(false);
    const list = await json(await asA(`/v1/boxes/${box.id}/trace/recordings`));
    expect(list.recordings.map((r: any) => r.id)).toEqual([stopped.data.recording]);
    expect(list.recordings[0].duration_ms ?? list.recordings[0].stopped_at_ms - list.recordings[0].started_at_ms).toBeGreaterThan(1000);
  });

  it("an agent's takeover for people counts too; a recording already running is left alone, before and after", async () => {
    const mine = await json(await asA(`/v1/boxes/${box.id}/screens/0/recording`, { method: "POST", json: { fps: 5 } }));
    expect(mine.recording).toBe(true);
    const taken = await asA(`/v1/boxes/${box.id}/screens/0/takeover`, { method: "POST", json: {} });
    expect(taken.status, await taken.clone().text()).toBe(200);
    await new Promise((r) => setTimeout(r, 1000));
    const back = await asA(`/v1/boxes/${box.id}/screens/0/takeover`, { method: "DELETE" });
    expect(back.status, await back.clone().text()).toBe(200);
    await new Promise((r) => setTimeout(r, 1500));
    // Still the agent's own recording, at its own rate.
    expect(await recording(box.id)).toMatchObject({ recording: true, path: mine.path, fps: 5 });
    expect((await entries(box.id)).filter((e) => e.event === "recording_started" && e.data.why === "takeover")).toHaveLength(1);
    await asA(`/v1/boxes/${box.id}/screens/0/recording`, { method: "DELETE" });

    // Without anything running, the agent's takeover is recorded like a person's.
    await asA(`/v1/boxes/${box.id}/screens/0/takeover`, { method: "POST", json: {} });
    await expect.poll(async () => (await recording(box.id)).recording, { timeout: 10_000 }).toBe(true);
    await asA(`/v1/boxes/${box.id}/screens/0/takeover`, { method: "DELETE" });
    await expect.poll(async () => (await recording(box.id)).recording, { timeout: 20_000 }).toBe(false);
    await expect
      .poll(async () => (await entries(box.id)).filter((e) => e.event === "recording_stopped" && e.data.kept).length, { timeout: 20_000 })
      .toBe(3);
  });

  it("the box page's switch turns it off; the next takeover records nothing", async () => {
    const csrf = console_.csrfIn(await console_.page(ada, `/boxes/${box.id}`));
    const html = await console_.page(ada, `/boxes/${box.id}`);
    expect(html).toContain("Record while a person has the screen");
    const res = await console_.form(ada, `/boxes/${box.id}`, { intent: "record_takeovers", on: "0", csrf });
    expect(res.status, await res.clone().text()).toBeLessThan(400);
    expect((await json(await asA(`/v1/boxes/${box.id}`))).record_takeovers).toBe(false);
    const before = (await entries(box.id)).filter((e) => e.event === "recording_started").length;
    await byPerson(box.id, "takeover");
    await new Promise((r) => setTimeout(r, 1500));
    expect((await recording(box.id)).recording).toBe(false);
    await byPerson(box.id, "giveback");
    expect((await entries(box.id)).filter((e) => e.event === "recording_started")).toHaveLength(before);
  });

  it("is refused without the video feature, for another workspace, and with a value that is not a boolean", async () => {
    const bare = await launch({ desktop: { features: [] } });
    const res = await asA(`/v1/boxes/${bare.id}`, { method: "PATCH", json: { record_takeovers: true } });
    const body = await json(res);
    expect(res.status, JSON.stringify(body)).toBe(400);
    expect(body).toMatchObject({ code: "unsupported", retryable: false });
    expect(body.message).toContain("video");
    // Turning it off is no recording: allowed.
    expect((await asA(`/v1/boxes/${bare.id}`, { method: "PATCH", json: { record_takeovers: false } })).status).toBe(200);

    const other = await asB(`/v1/boxes/${box.id}`, { method: "PATCH", json: { record_takeovers: true } });
    expect(other.status).toBe(404);
    const wrong = await asA(`/v1/boxes/${box.id}`, { method: "PATCH", json: { record_takeovers: "yes" } });
    expect(wrong.status).toBe(400);
    expect((await json(wrong)).code).toBe("bad_request");
    expect((await json(await asA(`/v1/boxes/${box.id}`))).record_takeovers).toBe(false);
  });
});
