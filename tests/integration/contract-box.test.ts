import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { type Person, consoleClient } from "../support/console";
import { type TestServer, docker, json, removeTestBoxes, startServer } from "../support/server";
import { raw } from "../support/http";

// Issue 11: the box record and the viewer socket held to seeds 000 and 002, on real boxes through
// the real server. Launches are queued (HOLM_SERVER_JOBS=queue) one at a time, so a box stays
// `starting` while the one before it boots; the third box's container is removed as soon as the
// engine has it, so that box is `failed` (its container went while it started).

// The test signs tickets itself (expired, for boxes no ticket route serves) with the server's key.
const KEY = "contract-box-integration-secret-key-0123456789";
process.env.HOLM_SECRET_KEY = KEY;
const { signTicket } = await import("~/models/ticket.server");

const ADVERTISED = "viewer.example.test";

let server: TestServer;
let c: ReturnType<typeof consoleClient>;
let ada: Person;
let key: string; // ada's workspace key: box A is the workspace's
let revokedKey: { secret: string; id: string };
let boxA: any; // two screens, launched first (by the key)
let boxB: any; // advertises ADVERTISED, queued behind A: `starting` while A boots
let boxF: any; // its container removed while it starts: `failed`

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const api = (p: string, init?: RequestInit & { json?: unknown }) => server.api(p, init);
const asKey = (secret: string, p: string, body?: unknown) =>
  fetch(`${server.base}${p}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

async function launch(body: unknown, secret?: string) {
  const res = secret ? await asKey(secret, "/v1/boxes", body) : await api("/v1/boxes", { method: "POST", json: body });
  const out = await json(res);
  // Queued: "POST /v1/boxes answers 202 with a box in the starting state" (000).
  expect(res.status, JSON.stringify(out)).toBe(202);
  expect(out.state).toBe("starting");
  return out;
}

async function settled(id: string, ms = 180_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const box = await json(await api(`/v1/boxes/${id}`));
    if (box.state !== "starting" || Date.now() > deadline) return box;
    await sleep(200);
  }
}

beforeAll(async () => {
  server = await startServer({ HOLM_SECRET_KEY: KEY, HOLM_SERVER_JOBS: "queue", HOLM_LAUNCH_CONCURRENCY: "1", HOLM_ADVERTISE_HOSTS: ADVERTISED });
  c = consoleClient(server);
  ada = await c.signUp("ada@example.com", "A");
  key = (await c.createKey(ada, "agent")).secret;
  revokedKey = await c.createKey(ada, "revoked");
  boxA = await launch({ spec: { desktop: { screens: 2 } } }, key);
  boxB = await launch({ spec: { policy: { advertise: ADVERTISED } } });
  // More CPUs than the machine has is refused before anything is recorded now (400), so the
  // failed box is one whose container goes while it starts.
  boxF = await launch({ metadata: { name: "doomed" } });
  void removeOnceCreated(boxF.id);
});

/**
 * Removes the box's container as soon as the engine has one (the launch then fails): on the
 * engine's `create` event, and by looking every 100 ms in case the event is missed. Tried until
 * the container is gone: on a loaded machine a look could come after the box was already ready
 * (a CI run with three shards found it `ready`), and a removal can fail while the engine is busy.
 */
async function removeOnceCreated(id: string) {
  const label = `holm.box=${id}`;
  let done = false;
  const removeUntilGone = async (cid: string) => {
    for (let i = 0; i < 50; i++) {
      try {
        await docker.getContainer(cid).remove({ force: true });
      } catch (err) {
        if ((err as { statusCode?: number }).statusCode === 404) break;
      }
      if (!(await docker.getContainer(cid).inspect().then(() => true, () => false))) break;
      await sleep(100);
    }
    done = true;
  };
  const events = (await docker.getEvents({ filters: { type: ["container"], event: ["create"], label: [label] } })) as NodeJS.ReadableStream & { destroy(): void };
  events.on("data", (chunk: Buffer) => {
    for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) {
      const cid = (JSON.parse(line) as { id?: string; Actor?: { ID?: string } }).Actor?.ID;
      if (cid && !done) void removeUntilGone(cid);
    }
  });
  try {
    for (const deadline = Date.now() + 180_000; Date.now() < deadline && !done; await sleep(100)) {
      const [c] = await docker.listContainers({ all: true, filters: { label: [label] } });
      if (c) await removeUntilGone(c.Id);
    }
  } finally {
    events.destroy();
  }
}

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

// ------------------------------------------------------------------ the viewer socket, raw

type Upgrade = { status: number; code?: string; retryable?: boolean; ws?: WebSocket; first?: Promise<string> };

/** Opens a viewer socket: the refusal's status and body, or the socket and its first message. */
function upgrade(url: string): Promise<Upgrade> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    const first = new Promise<string>((r) => ws.once("message", (d: Buffer) => r(d.toString("latin1"))));
    ws.once("open", () => resolve({ status: 101, ws, first }));
    ws.once("unexpected-response", (_req, res) => {
      let text = "";
      res.on("data", (d) => (text += d));
      res.on("end", () => {
        ws.terminate();
        const body = JSON.parse(text || "{}");
        resolve({ status: res.statusCode ?? -1, code: body.code, retryable: body.retryable });
      });
    });
    ws.once("error", reject);
  });
}

const socketUrl = (id: string, screen: number, ticket: string, mode = "view") =>
  `${server.base.replace(/^http/, "ws")}/v1/boxes/${id}/screens/${screen}/viewer/socket?ticket=${encodeURIComponent(ticket)}&mode=${mode}`;
const sign = (id: string, screen = 0, mode: "view" | "control" = "control", expires = Date.now() + 60_000) =>
  signTicket({ box_id: id, screen, mode, issuer: "server", expires_at_ms: expires });

async function refusal(url: string) {
  const u = await upgrade(url);
  u.ws?.close();
  return { status: u.status, code: u.code };
}

async function keyTicket(secret: string, id: string, screen = 0, mode?: "view" | "control") {
  const res = await asKey(secret, `/v1/boxes/${id}/screens/${screen}/viewer/ticket`, mode ? { mode } : {});
  const out = await json(res);
  expect(res.status, JSON.stringify(out)).toBe(200);
  return out.ticket as string;
}

// ------------------------------------------------------------------ starting, then failed

describe('"A box that is starting or failed refuses other calls with 409" (000)', () => {
  const refusedWith409 = async (res: Response, what: string, retryable: boolean) => {
    const body = await json(res);
    expect(res.status, `${what}: ${JSON.stringify(body)}`).toBe(409);
    expect(body, what).toMatchObject({ code: "denied", retryable });
  };

  it("starting: viewer tickets (/v1 and the console's), viewers, trace and fork answer 409 denied, retryable", async () => {
    const id = boxB.id;
    expect((await json(await api(`/v1/boxes/${id}`))).state, "B must still be starting behind A").toBe("starting");
    await refusedWith409(await api(`/v1/boxes/${id}/screens/0/viewer/ticket`, { method: "POST", json: {} }), "ticket", true);
    await refusedWith409(await api(`/v1/boxes/${id}/screens/0/viewers`), "viewers", true);
    await refusedWith409(await api(`/v1/boxes/${id}/trace`), "trace", true);
    await refusedWith409(await api(`/v1/boxes/${id}/fork`, { method: "POST", json: {} }), "fork", true);
    // The viewer socket, with a ticket the test signs (no route gives one now).
    expect(await refusal(socketUrl(id, 0, sign(id)))).toEqual({ status: 409, code: "denied" });
    // Reading the box itself goes on.
    expect((await api(`/v1/boxes/${id}`)).status).toBe(200);
  });

  it("starting, the console's ticket route: 409 denied", async () => {
    // Box A is the workspace's; a box of ada's still starting is needed: C, queued behind A and B.
    const boxC = await launch({}, key);
    const res = await fetch(`${server.base}/boxes/${boxC.id}/ticket?screen=0&mode=view`, { headers: { cookie: ada.cookie } });
    await refusedWith409(res, "console ticket", true);
    // "Delete of a starting box stays allowed": it cancels the launch.
    const del = await api(`/v1/boxes/${boxC.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    expect(del.status, await del.clone().text()).toBe(200);
    expect((await json(del)).state).toBe("gone");
  });

  it("failed: tickets, viewers and fork answer 409 denied, not retryable; its trace is readable (it says why)", async () => {
    boxF = await settled(boxF.id);
    expect(boxF.state, JSON.stringify(boxF)).toBe("failed");
    const id = boxF.id;
    await refusedWith409(await api(`/v1/boxes/${id}/screens/0/viewer/ticket`, { method: "POST", json: {} }), "ticket", false);
    await refusedWith409(await api(`/v1/boxes/${id}/screens/0/viewers`), "viewers", false);
    await refusedWith409(await api(`/v1/boxes/${id}/fork`, { method: "POST", json: {} }), "fork", false);
    expect(await refusal(socketUrl(id, 0, sign(id)))).toEqual({ status: 409, code: "denied" });
    const trace = await api(`/v1/boxes/${id}/trace`);
    expect(trace.status).toBe(200);
    expect((await json(trace)).entries.map((e: { event: string }) => e.event)).toContain("failed");
  });

  it("and both settle: A and B become ready", async () => {
    boxA = await settled(boxA.id);
    boxB = await settled(boxB.id);
    expect(boxA.state, JSON.stringify(boxA)).toBe("ready");
    expect(boxB.state, JSON.stringify(boxB)).toBe("ready");
  });
});

// ------------------------------------------------------------------ the box's JSON

describe("the box's JSON", () => {
  it("devtools_url (000): GET /v1/boxes/{id} gives one that answers through the proxy; listings carry none (a credential)", async () => {
    const one = await json(await api(`/v1/boxes/${boxA.id}`));
    expect(one.devtools_url).toMatch(new RegExp(`^${server.base}/v1/cdp/[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$`));
    // What connectOverCDP asks first: the browser's address, pointing back through the proxy.
    const version = await fetch(`${one.devtools_url}/json/version/`);
    expect(version.status).toBe(200);
    const ws = (await version.json()).webSocketDebuggerUrl as string;
    expect(ws.startsWith(`${server.base.replace(/^http/, "ws")}/v1/cdp/`), ws).toBe(true);
    for (const b of (await json(await api("/v1/boxes"))).boxes) expect(b).not.toHaveProperty("devtools_url");
  });

  it('"advertise: The host name to put in viewer URLs" (000): the viewer URLs name it, with the server\'s scheme and port', async () => {
    const port = new URL(server.base).port;
    expect(boxB.spec.policy.advertise).toBe(ADVERTISED);
    expect(boxB.viewer_url).toBe(`http://${ADVERTISED}:${port}/boxes/${boxB.id}?screen=0&desktop=1`);
    expect(boxB.viewer_urls).toEqual([boxB.viewer_url]);
    // Without advertise, the server's own address.
    expect(boxA.viewer_url.startsWith(`${server.base}/boxes/${boxA.id}?`)).toBe(true);
  });

  it("advertise names only what the server answers to: the page opens under it, another name is 400 and 421", async () => {
    const port = new URL(server.base).port;
    const page = await raw(server.base, "GET", "/login", { host: `${ADVERTISED}:${port}` });
    expect(page.status).toBe(200);
    const other = await api("/v1/boxes", { method: "POST", json: { spec: { policy: { advertise: "other.example.test" } } } });
    expect(other.status).toBe(400);
    expect(await json(other)).toMatchObject({ code: "bad_request", message: expect.stringContaining("HOLM_ADVERTISE_HOSTS") });
    expect((await raw(server.base, "GET", "/login", { host: `other.example.test:${port}` })).status).toBe(421);
  });

  it("advertise must be a host name: a scheme, port, path or space answers 400 bad_request", async () => {
    for (const advertise of ["http://viewer.example.test", "viewer.example.test:8080", "viewer.example.test/x", "a b", "-x.test", "", "x".repeat(64)]) {
      const res = await api("/v1/boxes", { method: "POST", json: { spec: { policy: { advertise } } } });
      const body = await json(res);
      expect(res.status, `${JSON.stringify(advertise)}: ${JSON.stringify(body)}`).toBe(400);
      expect(body.code).toBe("bad_request");
    }
  });

  it('"profile: A browser profile name" (000): a name that cannot be one answers 400 bad_request, and nothing is made', async () => {
    const before = (await json(await api("/v1/boxes"))).boxes.length;
    for (const profile of ["a b", "../x", "", "x".repeat(65)]) {
      const res = await api("/v1/boxes", { method: "POST", json: { placement: { profile } } });
      const body = await json(res);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(body).toMatchObject({ code: "bad_request", retryable: false });
      expect(body.message).toMatch(/profile/);
    }
    expect((await json(await api("/v1/boxes"))).boxes.length).toBe(before);
  });
});

// ------------------------------------------------------------------ refusals by the table

describe("viewer socket refusals follow the error table (000): status = the code's", () => {
  it("a missing, forged or expired ticket: 401 unauthorized", async () => {
    const good = await keyTicket(key, boxA.id);
    const [part, mac] = good.split(".") as [string, string];
    const forged = `${part}.${mac[0] === "A" ? "B" : "A"}${mac.slice(1)}`;
    expect(await refusal(socketUrl(boxA.id, 0, ""))).toEqual({ status: 401, code: "unauthorized" });
    expect(await refusal(socketUrl(boxA.id, 0, "nonsense"))).toEqual({ status: 401, code: "unauthorized" });
    expect(await refusal(socketUrl(boxA.id, 0, forged))).toEqual({ status: 401, code: "unauthorized" });
    expect(await refusal(socketUrl(boxA.id, 0, sign(boxA.id, 0, "control", Date.now() - 1000)))).toEqual({ status: 401, code: "unauthorized" });
    expect((await refusal(socketUrl(boxA.id, 0, good))).status).toBe(101);
  });

  it("a ticket of a revoked key: 401 unauthorized", async () => {
    const ticket = await keyTicket(revokedKey.secret, boxA.id);
    const csrf = c.csrfIn(await c.page(ada, "/keys"));
    expect((await c.form(ada, "/keys?index", { intent: "revoke", id: revokedKey.id, csrf })).status).toBe(200);
    expect(await refusal(socketUrl(boxA.id, 0, ticket))).toEqual({ status: 401, code: "unauthorized" });
  });

  it("a ticket for another box or screen, control with a view ticket: 409 denied", async () => {
    const t = await keyTicket(key, boxA.id, 0);
    expect(await refusal(socketUrl(boxB.id, 0, sign(boxA.id)))).toEqual({ status: 409, code: "denied" });
    expect(await refusal(socketUrl(boxA.id, 1, t))).toEqual({ status: 409, code: "denied" });
    const v = await keyTicket(key, boxA.id, 0, "view");
    expect(await refusal(socketUrl(boxA.id, 0, v, "control"))).toEqual({ status: 409, code: "denied" });
    expect(await refusal(socketUrl(boxA.id, 0, v, "drive"))).toEqual({ status: 400, code: "bad_request" });
  });

  it("control by a person made a viewer since the ticket, or while someone holds the screen: 409 denied", async () => {
    const mia = await c.invite(ada, "mia@example.com", "member");
    const minted = await json(await fetch(`${server.base}/boxes/${boxA.id}/ticket?screen=0&mode=control`, { headers: { cookie: mia.cookie } }));
    expect(minted.mode).toBe("control");
    const csrf = c.csrfIn(await c.page(ada, "/members"));
    await c.form(ada, "/members", { intent: "role", user: mia.id, role: "viewer", csrf });
    const ws = `${server.base.replace(/^http/, "ws")}${minted.path}`;
    expect(await refusal(ws)).toEqual({ status: 409, code: "denied" });

    const control = await keyTicket(key, boxA.id, 0, "control");
    expect((await api(`/v1/boxes/${boxA.id}/screens/0/takeover`, { method: "POST", json: { shared: false } })).status).toBe(200);
    try {
      expect(await refusal(socketUrl(boxA.id, 0, control, "control"))).toEqual({ status: 409, code: "denied" });
    } finally {
      expect((await api(`/v1/boxes/${boxA.id}/screens/0/takeover`, { method: "DELETE" })).status).toBe(200);
    }
  });

  it("no such box, or a screen it lacks: 404 not_found", async () => {
    const ghost = "box_00000000000000000000000000000002";
    expect(await refusal(socketUrl(ghost, 0, sign(ghost)))).toEqual({ status: 404, code: "not_found" });
    expect(await refusal(socketUrl(boxA.id, 2, sign(boxA.id, 2)))).toEqual({ status: 404, code: "not_found" });
  });
});

// ------------------------------------------------------------------ a paused box waits

describe('a paused box: "Calls to it wait until it resumes. They do not fail." (002)', () => {
  it("the viewer socket is held until the box resumes, then opens and greets (RFB 003.008)", async () => {
    expect((await api(`/v1/boxes/${boxA.id}/pause`, { method: "POST" })).status).toBe(200);
    let resumedAt = 0;
    const pending = upgrade(socketUrl(boxA.id, 0, await keyTicket(key, boxA.id, 0, "view")));
    let settledEarly = false;
    void pending.then(() => (settledEarly = resumedAt === 0));
    await sleep(1000);
    resumedAt = Date.now();
    expect((await api(`/v1/boxes/${boxA.id}/resume`, { method: "POST" })).status).toBe(200);
    const u = await pending;
    expect(settledEarly, "the upgrade was answered while the box was paused").toBe(false);
    expect(u.status).toBe(101);
    expect(await u.first).toBe("RFB 003.008\n");
    u.ws!.close();
  });

  it("an attacker's held socket: a revoked key's ticket is refused at once, not held; bytes sent while held are capped", async () => {
    const doomed = await c.createKey(ada, "revoked-while-paused");
    const ticket = await keyTicket(doomed.secret, boxA.id, 0, "view");
    const csrf = c.csrfIn(await c.page(ada, "/keys"));
    expect((await c.form(ada, "/keys?index", { intent: "revoke", id: doomed.id, csrf })).status).toBe(200);
    expect((await api(`/v1/boxes/${boxA.id}/pause`, { method: "POST" })).status).toBe(200);
    try {
      const started = Date.now();
      expect(await refusal(socketUrl(boxA.id, 0, ticket))).toEqual({ status: 401, code: "unauthorized" });
      expect(Date.now() - started, "the revoked ticket was held while the box was paused").toBeLessThan(3000);

      // A valid ticket, held while paused, whose client pours bytes into the socket: cut off
      // past a small cap instead of buffered until the box resumes.
      const u = new URL(socketUrl(boxA.id, 0, await keyTicket(key, boxA.id, 0, "view")));
      const sock = net.connect(Number(u.port), u.hostname);
      const closed = new Promise<void>((r) => sock.once("close", () => r()));
      sock.on("error", () => undefined);
      await new Promise<void>((r) => sock.once("connect", () => r()));
      sock.write(
        `GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
      );
      const chunk = Buffer.alloc(64 * 1024, 0x41);
      let sent = 0;
      while (!sock.destroyed && sent < 64 * 1024 * 1024) {
        if (!sock.write(chunk)) await Promise.race([new Promise((r) => sock.once("drain", r)), closed]);
        sent += chunk.length;
      }
      await Promise.race([closed, sleep(5000)]);
      expect(sock.destroyed, `still open after ${sent} bytes`).toBe(true);
      expect(sent).toBeLessThan(16 * 1024 * 1024);
    } finally {
      expect((await api(`/v1/boxes/${boxA.id}/resume`, { method: "POST" })).status).toBe(200);
    }
  });

  it("a client that leaves while the box is paused is let go, and the box's viewers stay at 0", async () => {
    expect((await api(`/v1/boxes/${boxA.id}/pause`, { method: "POST" })).status).toBe(200);
    const ws = new WebSocket(socketUrl(boxA.id, 1, await keyTicket(key, boxA.id, 1, "view")));
    ws.on("error", () => undefined);
    await sleep(500);
    ws.terminate();
    await sleep(300);
    expect((await api(`/v1/boxes/${boxA.id}/resume`, { method: "POST" })).status).toBe(200);
    await sleep(500);
    expect((await json(await api(`/v1/boxes/${boxA.id}/screens/1/viewers`))).watching).toBe(0);
  });
});

// ------------------------------------------------------------------ one URL per screen and desktop

describe('"Each screen has its own viewer URL" (002); "new desktop, new viewer URL" after stop → resume', () => {
  const page = async (url: string) => {
    const u = new URL(url);
    return (await fetch(`${server.base}${u.pathname}${u.search}`, { headers: { cookie: ada.cookie } })).text();
  };

  it("a 2-screen box has two viewer URLs, each opening that screen in the console", async () => {
    const urls: string[] = boxA.viewer_urls;
    expect(urls).toHaveLength(2);
    expect(new Set(urls).size).toBe(2);
    expect(boxA.viewer_url).toBe(urls[0]);
    for (const [n, url] of urls.entries()) {
      expect(new URL(url).searchParams.get("screen")).toBe(String(n));
      const html = await page(url);
      expect(html, `screen ${n}`).toMatch(new RegExp(`data-testid="vnc"[^>]*data-screen="${n}"`));
      expect(html).not.toContain("This desktop was restarted");
    }
  });

  it("stop → resume: new URLs; an old one says the desktop was restarted and links to the current one", async () => {
    const before: string[] = boxA.viewer_urls;
    const stopped = await json(await api(`/v1/boxes/${boxA.id}/stop`, { method: "POST" }));
    expect(stopped.viewer_urls, "a stop alone is the same desktop").toEqual(before);
    // A stopped box's socket: "the screen cannot be used now".
    expect(await refusal(socketUrl(boxA.id, 0, sign(boxA.id)))).toEqual({ status: 409, code: "screen_unavailable" });
    const resumed = await json(await api(`/v1/boxes/${boxA.id}/resume`, { method: "POST" }));
    expect(resumed.state).toBe("ready");
    const after: string[] = resumed.viewer_urls;
    expect(after).toHaveLength(2);
    for (const [n, url] of after.entries()) {
      expect(url, `screen ${n}`).not.toBe(before[n]);
      expect(new URL(url).searchParams.get("screen")).toBe(String(n));
    }
    expect(resumed.viewer_url).toBe(after[0]);
    // A pause and resume keeps the desktop, and the URLs.
    await api(`/v1/boxes/${boxA.id}/pause`, { method: "POST" });
    expect((await json(await api(`/v1/boxes/${boxA.id}/resume`, { method: "POST" }))).viewer_urls).toEqual(after);

    const old = await page(before[1]!);
    expect(old).toContain("This desktop was restarted");
    expect(old).not.toMatch(/data-testid="vnc"/);
    const current = new URL(after[1]!);
    expect(old).toContain(`href="/boxes/${boxA.id}${current.search.replace(/&/g, "&amp;")}"`);
    const fresh = await page(after[1]!);
    expect(fresh).not.toContain("This desktop was restarted");
    expect(fresh).toMatch(/data-testid="vnc"[^>]*data-screen="1"/);
  });
});

// ------------------------------------------------------------------ removed

describe("a removed box", () => {
  it('its viewer socket answers 410 gone ("gone | 410 | The box was removed", 000)', async () => {
    const ticket = sign(boxB.id);
    expect((await api(`/v1/boxes/${boxB.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } })).status).toBe(200);
    expect(await refusal(socketUrl(boxB.id, 0, ticket))).toEqual({ status: 410, code: "gone" });
  });

  it("a failed box is deleted like any other", async () => {
    const res = await api(`/v1/boxes/${boxF.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    expect(res.status).toBe(200);
  });
});
