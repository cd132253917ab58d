import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Person, consoleClient } from "../support/console";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { type Api, apiAs } from "../support/workspaces";

// Who did it: every trace entry (but frames, whose actor is whoever had the screen) and every
// event names the person or key that caused it, as `data.by` (`user:<id>`, `key:<id>`,
// `server`) and `data.by_name` (the name then). A person acts through the console's forms and
// through /v1 with their session (as the console's own pages do); an agent through a key or the
// server token; the server itself when a grace timer or the launch does something.

let server: TestServer;
let c: ReturnType<typeof consoleClient>;
let ada: Person;
let adaId: string;
let key: { secret: string; id: string };
let asKey: Api;

type Entry = { seq: number; actor: string; event: string; screen?: number; data?: Record<string, unknown> };
type Event = { seq: number; kind: string; box_id?: string; data?: Record<string, unknown> };

const ADA = () => ({ by: `user:${adaId}`, by_name: "ada" });
const KEY = () => ({ by: `key:${key.id}`, by_name: "agent-1" });
const SERVER = { by: "server", by_name: "server" };

/** /v1 as Ada's console session (what a console page's fetch does): cookie, and the CSRF header for changes. */
async function asAda(path: string, init: { method?: string; json?: unknown } = {}) {
  const csrf = c.csrfIn(await c.page(ada, "/keys"));
  return fetch(`${server.base}${path}`, {
    method: init.method ?? "GET",
    headers: {
      cookie: ada.cookie,
      "x-holm-csrf": csrf,
      "x-holm-confirm-delete": "true",
      ...(init.json !== undefined ? { "content-type": "application/json" } : {}),
    },
    body: init.json === undefined ? undefined : JSON.stringify(init.json),
  });
}

/** A form on a box's console page, as Ada (take over, give back, pause, resume, remove). */
async function boxForm(boxId: string, intent: string) {
  const csrf = c.csrfIn(await c.page(ada, `/boxes/${boxId}`));
  const res = await c.form(ada, `/boxes/${boxId}`, { intent, screen: "0", csrf });
  const text = await res.text();
  expect(res.status, `${intent}: ${text.slice(0, 300)}`).toBe(200);
  // A refused form answers its error in the page's action data, which the page streams escaped
  // inside a script (`\"error\",\"…\"`): not there.
  expect(text).not.toContain('\\"error\\"');
}

async function traceOf(boxId: string): Promise<Entry[]> {
  return (await json(await asKey(`/v1/boxes/${boxId}/trace?limit=500`))).entries;
}

async function eventsOf(boxId: string): Promise<Event[]> {
  return ((await json(await asKey("/v1/events?limit=1000"))).events as Event[]).filter((e) => e.box_id === boxId);
}

/** The entries of one kind, each as {actor, by, by_name}. */
function who(entries: Entry[], event: string) {
  return entries.filter((e) => e.event === event).map((e) => ({ actor: e.actor, by: e.data?.by, by_name: e.data?.by_name }));
}

function whoEv(events: Event[], kind: string) {
  return events.filter((e) => e.kind === kind).map((e) => ({ by: e.data?.by, by_name: e.data?.by_name }));
}

/** Every entry but frames names someone; every event too. */
function allNamed(entries: Entry[], events: Event[]) {
  const unnamed = entries.filter((e) => e.event !== "frame" && (typeof e.data?.by !== "string" || typeof e.data?.by_name !== "string"));
  expect(unnamed, "trace entries without by/by_name").toEqual([]);
  const unnamedEv = events.filter((e) => typeof e.data?.by !== "string" || typeof e.data?.by_name !== "string");
  expect(unnamedEv, "events without by/by_name").toEqual([]);
}

beforeAll(async () => {
  server = await startServer({ HOLM_TAKEOVER_GRACE_SECS: "5" });
  c = consoleClient(server);
  ada = await c.signUp("ada@example.com", "Attribution");
  adaId = await c.userId(ada, "ada@example.com");
  key = await c.createKey(ada, "agent-1");
  asKey = apiAs(server, key.secret);
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

describe("attribution", () => {
  it("a key's box: the key's calls name the key; Ada's console forms and /v1 calls name Ada", async () => {
    const box = await json(await asKey("/v1/boxes", { method: "POST", json: { spec: { desktop: { features: [] } } } }));
    expect(box.state, JSON.stringify(box)).toBe("ready");
    const screen = `/v1/boxes/${box.id}/screens/0`;

    // The key drives, and hands the screen to a person and takes it back.
    expect((await asKey(`${screen}/actions`, { method: "POST", json: { actions: [{ type: "cursor" }] } })).status).toBe(200);
    expect((await asKey(`/v1/boxes/${box.id}/exec`, { method: "POST", json: { argv: ["true"] } })).status).toBe(200);
    expect((await asKey(`${screen}/takeover`, { method: "POST", json: {} })).status).toBe(200);
    expect((await asKey(`${screen}/takeover`, { method: "DELETE" })).status).toBe(200);

    // Ada takes over and gives back on the box page, then through /v1 with her session.
    await boxForm(box.id, "takeover");
    await boxForm(box.id, "giveback");
    expect((await asAda(`${screen}/takeover`, { method: "POST", json: {} })).status).toBe(200);
    expect((await asAda(`${screen}/takeover`, { method: "DELETE" })).status).toBe(200);
    // Pause through /v1, resume on the page, remove on the page.
    expect((await asAda(`/v1/boxes/${box.id}/pause`, { method: "POST" })).status).toBe(200);
    await boxForm(box.id, "resume");
    await boxForm(box.id, "remove");

    const entries = await traceOf(box.id);
    expect(who(entries, "box_created")).toEqual([{ actor: "agent", ...KEY() }]);
    expect(who(entries, "ready")).toEqual([{ actor: "server", ...SERVER }]);
    expect(who(entries, "acted")).toEqual([{ actor: "agent", ...KEY() }]);
    expect(who(entries, "ran")).toEqual([{ actor: "agent", ...KEY() }]);
    expect(who(entries, "takeover_started")).toEqual([
      { actor: "agent", ...KEY() },
      { actor: "person", ...ADA() },
      { actor: "person", ...ADA() },
    ]);
    expect(who(entries, "takeover_ended")).toEqual([
      { actor: "agent", ...KEY() },
      { actor: "person", ...ADA() },
      { actor: "person", ...ADA() },
    ]);
    // Whose takeover it was stays on the entry.
    expect(entries.filter((e) => e.event === "takeover_ended").map((e) => e.data?.held_by)).toEqual([`key:${key.id}`, `user:${adaId}`, `user:${adaId}`]);
    expect(who(entries, "paused")).toEqual([{ actor: "person", ...ADA() }]);
    expect(who(entries, "resumed")).toEqual([{ actor: "person", ...ADA() }]);
    expect(who(entries, "gone")).toEqual([{ actor: "person", ...ADA() }]);

    const events = await eventsOf(box.id);
    expect(whoEv(events, "box.created")).toEqual([KEY()]);
    // Ready after the launch (the server), then after Ada's resume.
    expect(whoEv(events, "box.ready")).toEqual([SERVER, ADA()]);
    expect(whoEv(events, "screen.taken_over")).toEqual([KEY(), ADA(), ADA()]);
    expect(whoEv(events, "screen.given_back")).toEqual([KEY(), ADA(), ADA()]);
    expect(whoEv(events, "box.paused")).toEqual([ADA()]);
    expect(whoEv(events, "box.removed")).toEqual([ADA()]);
    allNamed(entries, events);
  });

  it("a box Ada launches and removes through /v1 with her session, forked on the trace page; the grace timer is the server's", async () => {
    const made = await asAda("/v1/boxes", { method: "POST", json: { spec: { desktop: { features: [] } } } });
    const box = await json(made);
    expect(box.state, JSON.stringify(box)).toBe("ready");

    // A takeover Ada never opens a control connection for comes back by itself.
    await boxForm(box.id, "takeover");
    await expect.poll(async () => who(await traceOf(box.id), "takeover_ended"), { timeout: 30_000 }).toEqual([{ actor: "server", ...SERVER }]);

    // A fork from the trace page's form is Ada's; the fork's own first entries say so.
    const entries0 = await traceOf(box.id);
    const csrf = c.csrfIn(await c.page(ada, `/boxes/${box.id}/trace`));
    const forked = await c.form(ada, `/boxes/${box.id}/trace`, { intent: "fork", seq: String(entries0.at(-1)!.seq), csrf });
    const forkHtml = await forked.text();
    const forkId = forkHtml.match(/box_[0-9a-f]{32}/g)?.find((id) => id !== box.id);
    expect(forkId, forkHtml.slice(0, 500)).toBeTruthy();

    expect((await asAda(`/v1/boxes/${box.id}`, { method: "DELETE" })).status).toBe(200);
    const entries = await traceOf(box.id);
    expect(who(entries, "box_created")).toEqual([{ actor: "person", ...ADA() }]);
    expect(who(entries, "takeover_started")).toEqual([{ actor: "person", ...ADA() }]);
    expect(entries.find((e) => e.event === "takeover_ended")?.data?.held_by).toBe(`user:${adaId}`);
    expect(who(entries, "gone")).toEqual([{ actor: "person", ...ADA() }]);
    const events = await eventsOf(box.id);
    expect(whoEv(events, "box.created")).toEqual([ADA()]);
    expect(whoEv(events, "screen.given_back")).toEqual([SERVER]);
    expect(whoEv(events, "box.removed")).toEqual([ADA()]);
    allNamed(entries, events);

    await expect.poll(async () => (await json(await asKey(`/v1/boxes/${forkId}`))).state, { timeout: 120_000 }).not.toBe("starting");
    const forkEntries = await traceOf(forkId!);
    expect(who(forkEntries, "box_created")).toEqual([{ actor: "person", ...ADA() }]);
    expect(who(forkEntries, "forked_from")).toEqual([{ actor: "person", ...ADA() }]);
    expect((await asKey(`/v1/boxes/${forkId}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } })).status).toBe(200);
    expect(who(await traceOf(forkId!), "gone")).toEqual([{ actor: "agent", ...KEY() }]);
  });

  it("the server token is named as such", async () => {
    const box = await json(await server.api("/v1/boxes", { method: "POST", json: { spec: { desktop: { features: [] } } } }));
    expect(box.state, JSON.stringify(box)).toBe("ready");
    expect((await server.api(`/v1/boxes/${box.id}/exec`, { method: "POST", json: { argv: ["true"] } })).status).toBe(200);
    expect((await server.api(`/v1/boxes/${box.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } })).status).toBe(200);
    const entries = (await json(await server.api(`/v1/boxes/${box.id}/trace?limit=500`))).entries as Entry[];
    const token = { by: "server", by_name: "server token" };
    expect(who(entries, "box_created")).toEqual([{ actor: "agent", ...token }]);
    expect(who(entries, "ran")).toEqual([{ actor: "agent", ...token }]);
    expect(who(entries, "gone")).toEqual([{ actor: "agent", ...token }]);
    const events = ((await json(await server.api("/v1/events?limit=1000"))).events as Event[]).filter((e) => e.box_id === box.id);
    expect(whoEv(events, "box.removed")).toEqual([token]);
    allNamed(entries, events);
  });
});
