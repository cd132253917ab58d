import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type Member, type Person, consoleClient } from "../support/console";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { type Closing, closedWithin, openViewer } from "../support/sockets";

// A person's takeover, attacked by the agent: an API key (and the server token) may not drive,
// exec, paste, open a control socket, nor end or replace the person's takeover; only that person,
// an owner or admin of the workspace, or the grace timer give the screen back. A takeover the
// agent asked for through /v1 is the agent's to end.

let server: TestServer;
let c: ReturnType<typeof consoleClient>;
let ada: Person; // owner
let mia: Member; // member: takes over
let dan: Member; // member: another person
let adm: Member; // admin
let key = "";
let boxId = "";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const wsUrl = (p: string) => `${server.base.replace(/^http/, "ws")}${p}`;

function asKey(path: string, method = "GET", body?: unknown) {
  return fetch(`${server.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}
const screen = () => `/v1/boxes/${boxId}/screens/0`;

/** A console form on the box page (take over, give back, clipboard) as a person. */
async function boxForm(p: Person, intent: string, extra: Record<string, string> = {}) {
  const csrf = c.csrfIn(await c.page(p, `/boxes/${boxId}`));
  const res = await c.form(p, `/boxes/${boxId}`, { intent, screen: "0", csrf, ...extra });
  return { status: res.status, text: await res.text() };
}

/** Who holds screen 0 (`user:<id>`, `key:<id>`, `server`), from the events the server records. */
async function holder(): Promise<string | null> {
  const v = await json(await server.api(`${screen()}/viewers`));
  if (!v.taken_over) return null;
  const events = (await json(await server.api("/v1/events?limit=1000"))).events as any[];
  const last = events.filter((e) => e.box_id === boxId && e.kind === "screen.taken_over").at(-1);
  return last?.data?.by ?? "?";
}

async function personTicket(p: Person, mode: "view" | "control") {
  const res = await fetch(`${server.base}/boxes/${boxId}/ticket?screen=0&mode=${mode}`, { headers: { cookie: p.cookie } });
  const body = await json(res);
  return { status: res.status, body, url: res.ok ? wsUrl(body.path) : "" };
}

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_TAKEOVER_GRACE_SECS: "30" });
  c = consoleClient(server);
  ada = await c.signUp("ada@example.com", "A");
  mia = await c.invite(ada, "mia@example.com", "member");
  dan = await c.invite(ada, "dan@example.com", "member");
  adm = await c.invite(ada, "adm@example.com", "admin");
  key = (await c.createKey(ada, "agent")).secret;
  const res = await asKey("/v1/boxes", "POST", {});
  const box = await json(res);
  expect(res.status, JSON.stringify(box)).toBe(200);
  boxId = box.id;
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

beforeEach(async () => {
  // Whatever the last test left: the owner gives it back.
  await boxForm(ada, "giveback");
  expect(await holder()).toBeNull();
});

describe("a person's takeover is hands off for the agent", () => {
  it("the key can neither drive, exec, paste, nor mint or keep a control socket", async () => {
    const kt = await json(await asKey(`${screen()}/viewer/ticket`, "POST", { mode: "control" }));
    const agentControl = (await openViewer(kt.control_socket)) as Closing;
    expect(typeof agentControl).toBe("object");

    const take = await boxForm(mia, "takeover");
    expect(take.status, take.text).toBe(200);
    const takenAt = Date.now();
    expect(await holder()).toBe(`user:${mia.id}`);

    // The agent's open control socket is closed at once.
    const closed = await closedWithin(agentControl, 1500);
    expect(closed, "the agent's control socket is still open").toBeDefined();
    expect(closed!.at - takenAt).toBeLessThan(1500);
    expect(closed!.code).toBe(4403);

    for (const [what, res] of [
      ["batch click", await asKey(`${screen()}/actions`, "POST", { actions: [{ type: "click", at: { x: 5, y: 5 } }] })],
      ["batch exec", await asKey(`${screen()}/actions`, "POST", { actions: [{ type: "exec", what: { argv: ["true"] } }] })],
      ["exec", await asKey(`/v1/boxes/${boxId}/exec`, "POST", { argv: ["xdotool", "type", "pwned"] })],
      ["PUT clipboard", await asKey(`${screen()}/clipboard`, "PUT", { text: "pwned" })],
      ["control ticket", await asKey(`${screen()}/viewer/ticket`, "POST", { mode: "control" })],
      ["server-token exec", await server.api(`/v1/boxes/${boxId}/exec`, { method: "POST", json: { argv: ["true"] } })],
    ] as const) {
      const body = await json(res);
      expect(res.status, `${what}: ${JSON.stringify(body)}`).toBe(409);
      expect(body, what).toMatchObject({ code: "denied", retryable: true });
    }
    // The old control ticket no longer opens control; it still watches.
    expect(await openViewer(kt.control_socket)).toBe(409);
    const watch = (await openViewer(kt.view_socket)) as Closing;
    expect(typeof watch).toBe("object");
    watch.close();

    // Another person may watch but not drive; the holder drives.
    expect((await personTicket(dan, "control")).status).toBe(409);
    const mine = await personTicket(mia, "control");
    expect(mine.status, JSON.stringify(mine.body)).toBe(200);
    const drive = (await openViewer(mine.url)) as Closing;
    expect(typeof drive).toBe("object");
    expect(await drive.alive()).toBe(true);
    drive.close();
  });

  it("a key's DELETE …/takeover of a person's takeover answers 409 denied and the person keeps control", async () => {
    expect((await boxForm(mia, "takeover")).status).toBe(200);
    for (const [what, res] of [
      ["key DELETE", await asKey(`${screen()}/takeover`, "DELETE")],
      ["server-token DELETE", await server.api(`${screen()}/takeover`, { method: "DELETE" })],
      ["key POST shared", await asKey(`${screen()}/takeover`, "POST", { shared: true })],
    ] as const) {
      const body = await json(res);
      expect(res.status, `${what}: ${JSON.stringify(body)}`).toBe(409);
      expect(body.code, what).toBe("denied");
      expect(await holder(), what).toBe(`user:${mia.id}`);
    }
    expect((await asKey(`${screen()}/actions`, "POST", { actions: [{ type: "move", to: { x: 1, y: 1 } }] })).status).toBe(409);
  });

  it("another member cannot give it back; the holder, an admin and the owner can", async () => {
    expect((await boxForm(mia, "takeover")).status).toBe(200);
    const refused = await boxForm(dan, "giveback");
    expect(refused.text).toMatch(/only .*give it back|owner or admin/);
    expect(await holder()).toBe(`user:${mia.id}`);
    // Nor may another member replace it with their own.
    expect((await boxForm(dan, "takeover")).text).toMatch(/already held/);
    expect(await holder()).toBe(`user:${mia.id}`);

    expect((await boxForm(adm, "giveback")).text).toContain("Given back");
    expect(await holder()).toBeNull();

    expect((await boxForm(mia, "takeover")).status).toBe(200);
    expect((await boxForm(mia, "giveback")).text).toContain("Given back");
    expect(await holder()).toBeNull();

    expect((await boxForm(mia, "takeover")).status).toBe(200);
    expect((await boxForm(ada, "giveback")).text).toContain("Given back");
    expect(await holder()).toBeNull();
    expect((await asKey(`${screen()}/actions`, "POST", { actions: [{ type: "move", to: { x: 2, y: 2 } }] })).status).toBe(200);
  });

  it("a takeover the agent asked for through /v1 is ended through /v1, or by a person", async () => {
    const take = await asKey(`${screen()}/takeover`, "POST", {});
    expect(take.status).toBe(200);
    expect(await holder()).toMatch(/^key:/);
    // The people of the console drive it; the key does not.
    expect((await personTicket(dan, "control")).status).toBe(200);
    expect((await asKey(`${screen()}/viewer/ticket`, "POST", { mode: "control" })).status).toBe(409);
    expect(await json(await asKey(`${screen()}/takeover`, "DELETE"))).toMatchObject({ given_back: true });
    expect(await holder()).toBeNull();

    expect((await asKey(`${screen()}/takeover`, "POST", {})).status).toBe(200);
    expect((await boxForm(dan, "giveback")).text).toContain("Given back");
    expect(await holder()).toBeNull();
  });

  it("the person's control socket is not closed by their own takeover; a demoted holder's is, and the screen comes back", async () => {
    const t = await personTicket(mia, "control");
    expect(t.status).toBe(200);
    const drive = (await openViewer(t.url)) as Closing;
    expect((await boxForm(mia, "takeover")).status).toBe(200);
    await sleep(300);
    expect(await drive.alive()).toBe(true);
    const csrf = c.csrfIn(await c.page(ada, "/members"));
    expect((await c.form(ada, "/members", { intent: "role", user: mia.id, role: "viewer", csrf })).status).toBeLessThan(400);
    const closed = await closedWithin(drive, 1500);
    expect(closed, "the demoted holder still drives").toBeDefined();
    // And the screen is the agent's again at once, not after the grace period.
    await sleep(300);
    expect(await holder()).toBeNull();
    expect((await asKey(`${screen()}/actions`, "POST", { actions: [{ type: "move", to: { x: 6, y: 6 } }] })).status).toBe(200);
    // Promoted again for whatever follows.
    const csrf2 = c.csrfIn(await c.page(ada, "/members"));
    await c.form(ada, "/members", { intent: "role", user: mia.id, role: "member", csrf: csrf2 });
  });

  it("another member's pause, stop and remove from the console are refused as /v1 refuses them, with the reason on the page", async () => {
    expect((await boxForm(mia, "takeover")).status).toBe(200);
    const reason = /a person has control of screen 0 of this box; (pausing|stopping|removing) the box/;
    // A refused console form answers 400 with the reason on the page (app/edge/form.server.ts).
    for (const intent of ["pause", "stop"]) {
      const r = await boxForm(dan, intent);
      expect(r.status, `box page ${intent}`).toBe(400);
      expect(r.text, `box page ${intent}`).toMatch(reason);
    }
    const listCsrf = c.csrfIn(await c.page(dan, "/"));
    const removed = await c.form(dan, "/?index", { intent: "remove", id: boxId, csrf: listCsrf });
    const text = await removed.text();
    expect(removed.status).toBe(400);
    expect(text).toMatch(reason);
    expect(text).not.toMatch(/Removed\./);
    expect((await json(await asKey(`/v1/boxes/${boxId}`))).state).toBe("ready");
    // The holder may still change their own box's state (resume brings back only what was).
    expect((await boxForm(mia, "pause")).status).toBe(200);
    expect((await boxForm(dan, "resume")).status).toBe(200);
    expect((await json(await asKey(`/v1/boxes/${boxId}`))).state).toBe("ready");
  });

  it("a removed box ends its tickets and its sockets", async () => {
    const watch = await personTicket(mia, "view");
    const s = (await openViewer(watch.url)) as Closing;
    expect(typeof s).toBe("object");
    const later = await personTicket(mia, "control");
    expect(later.status).toBe(200);
    const res = await fetch(`${server.base}/v1/boxes/${boxId}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${key}`, "x-holm-confirm-delete": "true" },
    });
    expect(res.status).toBe(200);
    expect((await closedWithin(s, 5000))?.code).toBe(4404);
    // "gone | 410 | The box was removed" (000): the socket's upgrade follows the table.
    expect(await openViewer(later.url)).toBe(410);
    expect(await openViewer(watch.url)).toBe(410);
  });
});
