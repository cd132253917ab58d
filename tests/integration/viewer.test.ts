import { constants as zlibConstants, deflateSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RfbClient, viewerTicket } from "../../bench/rfb-client";
import { Page } from "../support/cdp";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// The viewer socket through the real server on real boxes, spoken in RFB by the test itself
// (no noVNC). What a viewer sends is checked from inside the box: the pointer (the agent's
// cursor route), the page (key and mouse events counted over CDP), and cut text in the root
// window's CUT_BUFFER0 (read with xprop through the exec route) and the selections (the
// clipboard route). x11vnc 0.9.16 writes a client's cut text to CUT_BUFFER0; it does not take
// the PRIMARY/CLIPBOARD selections here, so the cut buffer is where a driver's text shows.
// viewer.wayland.test.ts runs the suite again on Wayland boxes (issue 18, ADR 0030): the relay
// reaches wayvnc there (through the agent's VNC port), which has no cut buffer: it gives a
// client's cut text to the Wayland clipboard, read with wl-paste through the exec route.

// The desktop the suite's boxes run: X11, or Wayland when viewer.wayland.test.ts imports it.
const DESKTOP = (globalThis as { HOLM_VIEWER_DESKTOP?: string }).HOLM_VIEWER_DESKTOP ?? "x11";

// The test signs tickets itself (expired, for missing boxes) with the server's key.
const KEY = "viewer-integration-secret-key-0123456789";
process.env.HOLM_SECRET_KEY = KEY;
const { signTicket } = await import("~/models/ticket.server");

const PAGE = `<!doctype html><html><body style="margin:0">
<textarea id="t" style="position:absolute;left:40px;top:40px;width:600px;height:300px"></textarea>
<script>
window.st = { keys: 0, downs: 0 };
addEventListener("keydown", () => st.keys++, true);
addEventListener("mousedown", () => st.downs++, true);
</script></body></html>`;

let server: TestServer;
let box: any; // two screens: the one most tests use
let other: any; // one screen: other-box refusals, then removal with viewers on it
let page: Page;

const api = (p: string, init?: RequestInit & { json?: unknown }) => server.api(p, init);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function createBox(spec: { desktop?: Record<string, unknown> }) {
  const desktop = { ...spec.desktop, ...(DESKTOP === "wayland" && { server: "wayland" }) };
  const res = await api("/v1/boxes", { method: "POST", json: { spec: { ...spec, ...(Object.keys(desktop).length > 0 && { desktop }) } } });
  const out = await json(res);
  expect(res.status, JSON.stringify(out)).toBe(200);
  expect(out.spec.desktop.server).toBe(DESKTOP);
  return out;
}

beforeAll(async () => {
  server = await startServer({ HOLM_SECRET_KEY: KEY });
  [box, other] = await Promise.all([createBox({ desktop: { screens: 2 } }), createBox({})]);
  page = await Page.open(server, box.id);
});

afterAll(async () => {
  page?.close();
  await server?.stop();
  await removeTestBoxes();
});

const wsBase = () => server.base.replace(/^http/, "ws");
const socketUrl = (id: string, screen: number, q: string) => `${wsBase()}/v1/boxes/${id}/screens/${screen}/viewer/socket?${q}`;

/** The HTTP status a refused upgrade answers (or "open" when it was accepted). */
async function upgradeStatus(url: string): Promise<number | "open"> {
  try {
    const c = await RfbClient.overWebSocket(url);
    c.close();
    return "open";
  } catch (e) {
    return (e as { status?: number }).status ?? -1;
  }
}

async function connect(url: string, shared = 0) {
  const c = await RfbClient.overWebSocket(url);
  const init = await c.handshake(shared);
  return { c, init };
}

/** Round trip: an update answered after everything sent before it was processed by x11vnc. */
async function sync(c: RfbClient) {
  c.requestUpdate(true, 0, 0, 8, 8);
  c.requestUpdate(false, 0, 0, 8, 8);
  await c.nextUpdate();
}

async function batch(actions: unknown[]) {
  const res = await api(`/v1/boxes/${box.id}/screens/0/actions`, { method: "POST", json: { actions } });
  expect(res.status, await res.clone().text()).toBe(200);
}

const cursor = async () => json(await api(`/v1/boxes/${box.id}/screens/0/cursor`));
const clip = async (selection: "clipboard" | "primary") =>
  (await json(await api(`/v1/boxes/${box.id}/screens/0/clipboard?selection=${selection}`))).text as string;
async function exec(argv: string[]) {
  const res = await api(`/v1/boxes/${box.id}/exec`, { method: "POST", json: { argv } });
  const out = await json(res);
  expect(res.status, JSON.stringify(out)).toBe(200);
  return out as { code: number; stdout: string; stderr: string };
}
/**
 * Where a viewer's cut text lands, as read from inside the box: the root window's CUT_BUFFER0 on
 * X11 (xprop's line); on Wayland, which has no cut buffers, the clipboard wayvnc gives it to
 * (wl-paste's text, read as a program in the box would).
 */
const cutBuffer = async () =>
  DESKTOP === "wayland"
    ? (await exec(["wl-paste", "--no-newline"])).stdout
    : (await exec(["xprop", "-display", ":99", "-root", "CUT_BUFFER0"])).stdout.trim();
/** What `cutBuffer` answers when the cut text is `text`. */
const cutShows = (text: string) => (DESKTOP === "wayland" ? text : `CUT_BUFFER0(STRING) = "${text}"`);
const viewersOf = async (id: string, screen = 0) => json(await api(`/v1/boxes/${id}/screens/${screen}/viewers`));

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > deadline) return v;
    await sleep(50);
  }
}

/** A fresh page, the pointer parked away from it, and both selections set to a known text. */
async function reset() {
  await page.navigate(`data:text/html;base64,${Buffer.from(PAGE).toString("base64")}`);
  const t = await page.centre("#t");
  await batch([{ type: "click", at: t }, { type: "move", to: { x: 1200, y: 760 } }]);
  // The batch answers once the click is injected; a busy Chromium takes it a moment later, and a
  // count zeroed before that would count it against the next test.
  await until(() => page.evaluate<any>("window.st"), (s) => s.downs >= 1);
  await page.evaluate("window.st.downs = 0, window.st.keys = 0");
  for (const selection of ["clipboard", "primary"]) {
    const res = await api(`/v1/boxes/${box.id}/screens/0/clipboard`, { method: "PUT", json: { text: "before", selection } });
    expect(res.status).toBe(200);
  }
  // On Wayland the clipboard, just set, is where cut text lands: nothing more to set.
  if (DESKTOP !== "wayland") await exec(["xprop", "-display", ":99", "-root", "-f", "CUT_BUFFER0", "8s", "-set", "CUT_BUFFER0", "before"]);
  expect(await cutBuffer()).toBe(cutShows("before"));
  return t;
}

/** Everything a person could send: a move, a click on the textarea, three letters, cut text. */
async function sendInput(c: RfbClient, at: { x: number; y: number }, cutText: string) {
  c.pointer(0, at.x, at.y);
  c.pointer(1, at.x, at.y);
  c.pointer(0, at.x, at.y);
  c.type("abc");
  c.cut(cutText);
  await sync(c);
  await sleep(300);
}

describe("tickets", () => {
  it("POST …/viewer/ticket answers a ticket and absolute socket URLs", async () => {
    const t = await viewerTicket(server, box.id, 0);
    expect(t.mode).toBe("control");
    expect(t.expires_at_ms).toBeGreaterThan(Date.now() + 14 * 60_000);
    expect(t.expires_at_ms).toBeLessThanOrEqual(Date.now() + 15 * 60_000);
    expect(t.view_socket).toBe(socketUrl(box.id, 0, `ticket=${encodeURIComponent(t.ticket)}&mode=view`));
    expect(t.control_socket).toBe(socketUrl(box.id, 0, `ticket=${encodeURIComponent(t.ticket)}&mode=control`));
    const v = await viewerTicket(server, box.id, 1, { mode: "view" });
    expect(v.mode).toBe("view");
    expect(v.control_socket).toBeUndefined();
  });

  it("refuses a bad body, a missing screen, an unknown box and a missing token", async () => {
    const post = (p: string, body: unknown, headers: Record<string, string> = {}) =>
      api(p, { method: "POST", json: body, headers });
    expect((await post(`/v1/boxes/${box.id}/screens/0/viewer/ticket`, { mode: "drive" })).status).toBe(400);
    expect((await post(`/v1/boxes/${box.id}/screens/0/viewer/ticket`, { extra: 1 })).status).toBe(400);
    expect((await post(`/v1/boxes/${box.id}/screens/2/viewer/ticket`, {})).status).toBe(404);
    expect((await post(`/v1/boxes/box_00000000000000000000000000000000/screens/0/viewer/ticket`, {})).status).toBe(404);
    const res = await fetch(`${server.base}/v1/boxes/${box.id}/screens/0/viewer/ticket`, { method: "POST" });
    expect(res.status).toBe(401);
  });
});

describe("refusals at the upgrade (plain HTTP, no WebSocket)", () => {
  it("no ticket, junk, forged, expired: 401", async () => {
    const good = (await viewerTicket(server, box.id, 0)).ticket;
    const [part, mac] = good.split(".") as [string, string];
    const forged = `${part}.${mac[0] === "A" ? "B" : "A"}${mac.slice(1)}`;
    const expired = signTicket({ box_id: box.id, screen: 0, mode: "control", issuer: "server", expires_at_ms: Date.now() - 1000 });
    expect(await upgradeStatus(socketUrl(box.id, 0, "mode=view"))).toBe(401);
    expect(await upgradeStatus(socketUrl(box.id, 0, "ticket=nonsense"))).toBe(401);
    expect(await upgradeStatus(socketUrl(box.id, 0, `ticket=${forged}`))).toBe(401);
    expect(await upgradeStatus(socketUrl(box.id, 0, `ticket=${expired}`))).toBe(401);
    // The same ticket, untouched, opens.
    expect(await upgradeStatus(socketUrl(box.id, 0, `ticket=${good}`))).toBe("open");
  });

  // The seed's table: `denied` is 409 (contract-box.test.ts checks the codes too).
  it("a ticket for another box or another screen: 409; view ticket for control: 409", async () => {
    const t = await viewerTicket(server, box.id, 0);
    expect(await upgradeStatus(socketUrl(other.id, 0, `ticket=${t.ticket}&mode=view`))).toBe(409);
    expect(await upgradeStatus(socketUrl(box.id, 1, `ticket=${t.ticket}&mode=view`))).toBe(409);
    const v = await viewerTicket(server, box.id, 0, { mode: "view" });
    expect(await upgradeStatus(socketUrl(box.id, 0, `ticket=${v.ticket}&mode=control`))).toBe(409);
    expect(await upgradeStatus(socketUrl(box.id, 0, `ticket=${v.ticket}&mode=drive`))).toBe(400);
  });

  // A paused box's socket waits for it to resume (contract-box.test.ts), so it is not here.
  it("a valid ticket for a box that does not exist or a screen it lacks: 404", async () => {
    const ghost = "box_00000000000000000000000000000001";
    const sign = (id: string, screen: number) =>
      signTicket({ box_id: id, screen, mode: "control", issuer: "server", expires_at_ms: Date.now() + 60_000 });
    expect(await upgradeStatus(socketUrl(ghost, 0, `ticket=${sign(ghost, 0)}`))).toBe(404);
    expect(await upgradeStatus(socketUrl(box.id, 2, `ticket=${sign(box.id, 2)}`))).toBe(404);
  });

  it("an ordinary HTTP GET of the socket path is not a WebSocket", async () => {
    const t = await viewerTicket(server, box.id, 0);
    const res = await fetch(`${server.base}/v1/boxes/${box.id}/screens/0/viewer/socket?ticket=${t.ticket}`);
    expect(res.status).not.toBe(101);
    expect(res.ok).toBe(false);
  });
});

describe("view mode", () => {
  it("completes the handshake, gets a framebuffer update, and none of its input reaches the box", async () => {
    const at = await reset();
    const before = await cursor();
    expect(before).toMatchObject({ x: 1200, y: 760 });
    const t = await viewerTicket(server, box.id, 0, { mode: "view" });
    const { c, init } = await connect(t.view_socket);
    expect(init).toMatchObject({ width: 1280, height: 800, bpp: 32 });
    c.requestUpdate(false);
    const u = await c.nextUpdate();
    expect(u.rects.length).toBeGreaterThan(0);
    const covered = u.rects.filter((r) => r.encoding === 0).reduce((n, r) => n + r.w * r.h, 0);
    expect(covered).toBe(1280 * 800);

    await sendInput(c, at, "sent-by-a-viewer");
    expect(await cursor()).toMatchObject({ x: 1200, y: 760 });
    expect(await page.evaluate("window.st")).toEqual({ keys: 0, downs: 0 });
    expect(await page.evaluate("document.querySelector('#t').value")).toBe("");
    expect(await clip("clipboard")).toBe("before");
    expect(await clip("primary")).toBe("before");
    expect(await cutBuffer()).toBe(cutShows("before"));
    // Dropping input is not a reason to hang up.
    c.requestUpdate(false, 0, 0, 16, 16);
    await c.nextUpdate();
    c.close();
    expect((await c.closed).code).toBe(1005);
  });

  it("closes with a 4400-range code on a message it cannot frame", async () => {
    const t = await viewerTicket(server, box.id, 0, { mode: "view" });
    const { c } = await connect(t.view_socket);
    c.raw(Buffer.from([99, 0, 0, 0]));
    const closed = await c.closed;
    expect(closed.code).toBeGreaterThanOrEqual(4400);
    expect(closed.code).toBeLessThan(4500);
    expect(closed.reason).toMatch(/message type 99/);
  });

  it("echoes the binary subprotocol only when offered", async () => {
    const t = await viewerTicket(server, box.id, 0, { mode: "view" });
    const offered = await RfbClient.overWebSocket(t.view_socket, ["binary"]);
    expect(offered.ws.protocol).toBe("binary");
    offered.close();
    const none = await RfbClient.overWebSocket(t.view_socket);
    expect(none.ws.protocol).toBe("");
    none.close();
  });
});

describe("control mode", () => {
  // On Wayland the cursor route answers where a viewer put the pointer because the agent frames
  // the viewer's messages on their way to wayvnc (vnc-front.ts), which cannot be asked.
  it("the same input arrives: the pointer moves, the click and keys reach the page, the cut text the cut buffer", async () => {
    const at = await reset();
    const t = await viewerTicket(server, box.id, 0);
    const { c } = await connect(t.control_socket!);
    // Closed even when a check fails: a driver left connected would fail the counts that follow.
    try {
      c.requestUpdate(false);
      await c.nextUpdate();
      await sendInput(c, at, "sent-by-a-driver");
      expect(await cursor()).toMatchObject({ x: at.x, y: at.y });
      const st = await until(() => page.evaluate<any>("window.st"), (s) => s.keys >= 3);
      expect(st).toEqual({ keys: 3, downs: 1 });
      expect(await page.evaluate("document.querySelector('#t').value")).toBe("abc");
      expect(await until(cutBuffer, (v) => v.includes("sent-by-a-driver"))).toBe(cutShows("sent-by-a-driver"));
    } finally {
      c.close();
      await c.closed;
    }
  });
});

describe("a person's pastes in the trace", () => {
  // noVNC's extended clipboard (core/rfb.js): a ClientCutText with a negative length; 4 bytes of
  // flags (actions in the top byte, formats below), then Caps sizes or a Provide's zlib stream.
  const extended = (payload: Buffer) => {
    const h = Buffer.alloc(8);
    h[0] = 6;
    h.writeInt32BE(-payload.length, 4);
    return Buffer.concat([h, payload]);
  };
  const flags = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n >>> 0);
    return b;
  };
  const TEXT = 1, CAPS = 1 << 24, REQUEST = 1 << 25, PEEK = 1 << 26, NOTIFY = 1 << 27, PROVIDE = 1 << 28;
  const provide = (text: string) => {
    const t = Buffer.from(`${text}\0`, "utf8");
    const size = Buffer.alloc(4);
    size.writeUInt32BE(t.length);
    return extended(Buffer.concat([flags(PROVIDE | TEXT), deflateSync(Buffer.concat([size, t]), { finishFlush: zlibConstants.Z_FULL_FLUSH })]));
  };
  const clipboardEntries = async (after: number) => {
    const trace = await json(await api(`/v1/boxes/${box.id}/trace?limit=500&after=${after}`));
    return (trace.entries as any[]).filter((e) => e.event === "person_input" && e.data.kind === "clipboard").map((e) => e.data.bytes);
  };

  // wayvnc 0.5 (neatvnc 0.5.4) has no extended clipboard: it never sends the Caps after which
  // noVNC uses it, so noVNC sends it only plain ClientCutText, and it hangs up on a Caps, Request
  // or Peek (measured: "socket closed 4502 the box's VNC server closed the connection"). On
  // Wayland the test sends what noVNC sends there; the extended messages are X11's part.
  const EXTENDED = DESKTOP !== "wayland";

  it("only real pastes are recorded, with their size: never noVNC's capability or notify messages", async () => {
    const start = await lastSeq();
    const t = await viewerTicket(server, box.id, 0);
    const { c } = await connect(t.control_socket!);
    // As noVNC does: raw, and the extended clipboard pseudo-encoding (0xC0A1E5CE), without
    // which x11vnc hangs up on a negative length.
    const encodings = Buffer.alloc(12);
    encodings[0] = 2;
    encodings.writeUInt16BE(2, 2);
    encodings.writeInt32BE(0, 4);
    encodings.writeInt32BE(0xc0a1e5ce | 0, 8);
    c.raw(encodings);
    // What noVNC sends on every connection and when the box copies something: no paste.
    if (EXTENDED) {
      c.raw(extended(Buffer.concat([flags(CAPS | REQUEST | PEEK | NOTIFY | PROVIDE | TEXT), Buffer.alloc(4)])));
      c.raw(extended(flags(NOTIFY | TEXT)));
      c.raw(extended(flags(REQUEST | TEXT)));
      c.raw(extended(flags(PEEK)));
    }
    await sync(c);
    await sleep(500);
    expect(await clipboardEntries(start)).toEqual([]);
    // A plain cut and an extended Provide are pastes, by their size in bytes (on Wayland a second
    // plain cut, in Latin-1 as RFB's plain cut text is: 5 bytes).
    c.cut("twelve bytes");
    if (EXTENDED) c.raw(provide("héllo"));
    else c.cut("héllo");
    await sync(c);
    expect(await until(() => clipboardEntries(start), (v) => v.length >= 2)).toEqual([12, EXTENDED ? Buffer.byteLength("héllo") : 5]);
    c.close();
    await c.closed;
  });

  async function lastSeq(): Promise<number> {
    let after = -1;
    for (;;) {
      const page = await json(await api(`/v1/boxes/${box.id}/trace?limit=500&after=${after}`));
      if (page.entries.length) after = page.entries[page.entries.length - 1].seq;
      if (page.next === null) return after;
      after = page.next;
    }
  }
});

describe("several viewers, counts and closing", () => {
  it("serves several viewers at once (shared forced), counts them, and goes back to 0", async () => {
    expect(await until(() => viewersOf(box.id), (v) => v.watching === 0)).toEqual({ watching: 0, driving: 0, person_driving: false, taken_over: false });
    const view = await viewerTicket(server, box.id, 0, { mode: "view" });
    const ctl = await viewerTicket(server, box.id, 0);
    // Every client asks for an exclusive session (shared=0); none may push the others off.
    const clients = [];
    for (const url of [view.view_socket, view.view_socket, ctl.view_socket, ctl.control_socket!]) {
      clients.push((await connect(url, 0)).c);
    }
    const on1 = await connect((await viewerTicket(server, box.id, 1, { mode: "view" })).view_socket);
    for (const c of [...clients, on1.c]) {
      c.requestUpdate(false);
      await c.nextUpdate();
    }
    expect(await viewersOf(box.id)).toEqual({ watching: 4, driving: 1, person_driving: true, taken_over: false });
    expect(await viewersOf(box.id, 1)).toMatchObject({ watching: 1, driving: 0, person_driving: false });
    // Still all alive after each connected.
    for (const c of clients) await sync(c);

    clients[3]!.close();
    expect(await until(() => viewersOf(box.id), (v) => v.driving === 0)).toMatchObject({ watching: 3, driving: 0, person_driving: false });
    for (const c of [...clients.slice(0, 3), on1.c]) c.close();
    expect(await until(() => viewersOf(box.id), (v) => v.watching === 0)).toEqual({
      watching: 0,
      driving: 0,
      person_driving: false,
      taken_over: false,
    });
    expect(await until(() => viewersOf(box.id, 1), (v) => v.watching === 0)).toMatchObject({ watching: 0 });
  });

  it("a viewer that drops without a close handshake is counted out", async () => {
    const t = await viewerTicket(server, box.id, 0, { mode: "view" });
    expect(await until(() => viewersOf(box.id), (v) => v.watching === 0)).toMatchObject({ watching: 0 });
    const c = await RfbClient.overWebSocket(t.view_socket);
    await c.handshake();
    expect((await viewersOf(box.id)).watching).toBe(1);
    c.ws.terminate();
    expect(await until(() => viewersOf(box.id), (v) => v.watching === 0)).toMatchObject({ watching: 0 });
  });

  it("a viewer that stops reading holds up neither another viewer nor the agent", async () => {
    const t = await viewerTicket(server, box.id, 0, { mode: "view" });
    const slow = await RfbClient.overWebSocket(t.view_socket);
    await slow.handshake();
    const fast = (await connect(t.view_socket)).c;
    // The slow viewer reads nothing more, and asks for full updates (4 MB each, raw) one by one,
    // spaced so that x11vnc cannot merge them: far more than the socket buffers hold.
    slow.ws.pause();
    for (let i = 0; i < 40; i++) {
      slow.requestUpdate(false);
      await sleep(10);
    }
    const times: number[] = [];
    for (let i = 0; i < 8; i++) {
      const t0 = Date.now();
      fast.requestUpdate(false);
      await Promise.race([fast.nextUpdate(), sleep(4000).then(() => Promise.reject(new Error(`update ${i} stalled`)))]);
      times.push(Date.now() - t0);
    }
    expect(Math.max(...times), times.join(",")).toBeLessThan(4000);
    const f0 = Date.now();
    const frame = await api(`/v1/boxes/${box.id}/screens/0/frame`);
    expect(frame.status).toBe(200);
    await frame.arrayBuffer();
    await batch([{ type: "move", to: { x: 10, y: 10 } }]);
    expect(Date.now() - f0).toBeLessThan(3000);
    // Still connected, and it catches up once it reads again.
    slow.ws.resume();
    await slow.nextUpdate();
    for (const c of [slow, fast]) c.close();
  });

  it("removing the box closes its sockets with a 4xxx code", async () => {
    const t = await viewerTicket(server, other.id, 0);
    const a = (await connect(t.view_socket)).c;
    const b = (await connect(t.control_socket!)).c;
    expect(await viewersOf(other.id)).toMatchObject({ watching: 2, driving: 1 });
    const res = await api(`/v1/boxes/${other.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    expect(res.status).toBe(200);
    for (const c of [a, b]) {
      const closed = await Promise.race([c.closed, sleep(15_000).then(() => ({ code: -1, reason: "still open" }))]);
      expect(closed.code).toBeGreaterThanOrEqual(4000);
      expect(closed.code).toBeLessThan(5000);
      expect(closed.reason).toMatch(/removed/);
    }
  });
});
