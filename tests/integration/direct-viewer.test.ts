import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signDirectTicket } from "../../app/protocol/direct-viewer";
import { agentSecretOf } from "../support/box-auth";
import { type TestServer, docker, execIn, json, removeTestBoxes, startServer } from "../support/server";
import { closedWithin, openViewer } from "../support/sockets";
import { RfbClient } from "../../bench/rfb-client";
import { vncChallengeResponse } from "../../app/protocol/rfb/vnc-auth";
import { registerSecret } from "../support/log-secrets";
import { openStore } from "../support/store";
import { type Api, apiAs, twoWorkspaces } from "../support/workspaces";

// Direct viewer sockets (issue 18; spec.policy.auth token / password, bind, seed 000), on real
// boxes: the ticket answer's sockets go to the box itself, on a port published on loopback; the
// box checks what the server would (a ticket signed for this box and screen, not expired; control
// only with a control ticket and only while no one else holds the screen; a password opens
// watching only) and drops a watcher's input with the same RFB filter. Each attack is made here.

let server: TestServer;
let asA: Api;
let asB: Api;
let c: Awaited<ReturnType<typeof twoWorkspaces>>["c"];
let ada: Awaited<ReturnType<typeof twoWorkspaces>>["ada"];
let tokenBox = "";
let passwordBox = "";

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_TAKEOVER_GRACE_SECS: "30" });
  ({ asA, asB, c, ada } = await twoWorkspaces(server));
  tokenBox = (await launch({ policy: { auth: "token" } })).id;
  passwordBox = (await launch({ policy: { auth: "password", bind: "any" } })).id;
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

async function launch(spec: unknown): Promise<any> {
  const res = await asA("/v1/boxes", { method: "POST", json: { spec } });
  const box = await json(res);
  expect(res.status, JSON.stringify(box)).toBe(200);
  return box;
}

async function ticket(id: string, mode?: "view" | "control", as: Api = asA): Promise<any> {
  const res = await as(`/v1/boxes/${id}/screens/0/viewer/ticket`, { method: "POST", json: mode ? { mode } : {} });
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(200);
  // Credentials: the log check of the whole run looks for them in every server log.
  registerSecret(body.password, "a box's direct viewer password");
  for (const u of [body.view_socket, body.control_socket]) registerSecret(u && new URL(u).searchParams.get("ticket"), "a direct viewer ticket");
  return body;
}

/** Where the box's pointer is, as the agent reads it. */
async function pointerOf(id: string): Promise<{ x: number; y: number }> {
  const body = await json(await asA(`/v1/boxes/${id}/screens/0/cursor`));
  return { x: body.x, y: body.y };
}

async function moveTo(id: string, x: number, y: number) {
  const res = await asA(`/v1/boxes/${id}/screens/0/actions`, { method: "POST", json: { actions: [{ type: "move", to: { x, y } }] } });
  expect(res.status).toBe(200);
}

/** A person takes the screen, or gives it back, through the box page (as the console does). */
async function byPerson(id: string, intent: "takeover" | "giveback") {
  const csrf = c.csrfIn(await c.page(ada, `/boxes/${id}`));
  const res = await c.form(ada, `/boxes/${id}`, { intent, screen: "0", csrf });
  expect(res.status).toBe(200);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The server relay's view socket for a ticket the server signed (the ticket answer's `ticket`). */
const socketOfServer = (serverTicket: string) =>
  `${server.base.replace(/^http/, "ws")}/v1/boxes/${tokenBox}/screens/0/viewer/socket?${new URLSearchParams({ ticket: serverTicket, mode: "view" })}`;

/** How an upgrade ends: its refusal status, or the close code (negated) of one let in, closed. */
async function refusal(url: string): Promise<number> {
  const v = await openViewer(url);
  if (typeof v === "number") return v;
  v.close();
  return 0;
}

/** The counts the box page shows for screen 0, as its first render has them. */
async function pageCounts(id: string): Promise<string | undefined> {
  const html = (await c.page(ada, `/boxes/${id}`)).replaceAll("<!-- -->", "");
  return /\d+ watching · \d+ driving/.exec(html)?.[0];
}

describe("direct viewer sockets", () => {
  it("are published on loopback by default, on every address with bind any, and only for a box that asks; bind any without auth is refused", async () => {
    const plain = await launch({});
    for (const [id, want] of [
      [tokenBox, ["127.0.0.1"]],
      [passwordBox, ["0.0.0.0"]],
      [plain.id, []],
    ] as const) {
      const info = await docker.getContainer(`holm-${id}`).inspect();
      const bindings = Object.values(info.HostConfig.PortBindings ?? {}).flat() as { HostIp: string }[];
      expect(bindings.map((b) => b.HostIp)).toEqual(want);
    }
    // The box page says so, and where; a box without them says nothing of it.
    expect(await c.page(ada, `/boxes/${tokenBox}`)).toMatch(/Direct viewer<\/dt><dd[^>]*>signed tickets · loopback</);
    expect(await c.page(ada, `/boxes/${passwordBox}`)).toMatch(/Direct viewer<\/dt><dd[^>]*>password, watching only · every address</);
    expect(await c.page(ada, `/boxes/${plain.id}`)).not.toContain("Direct viewer");
    // A box without direct sockets answers with the server's relay, as before.
    expect((await ticket(plain.id)).view_socket).toContain(`/v1/boxes/${plain.id}/screens/0/viewer/socket`);
    const refused = await asA("/v1/boxes", { method: "POST", json: { spec: { policy: { bind: "any" } } } });
    expect(refused.status).toBe(400);
    expect((await json(refused)).message).toMatch(/policy\.auth token or password/);
  });

  it("token: the view socket goes to the box and shows the screen; input sent on it goes nowhere", async () => {
    const t = await ticket(tokenBox, "view");
    expect(t.view_socket).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/screens\/0\/viewer\?ticket=/);
    expect(t.control_socket).toBeUndefined();
    await moveTo(tokenBox, 20, 20);
    const v = await openViewer(t.view_socket);
    if (typeof v === "number") throw new Error(`refused: ${v}`);
    expect(v.rfb.init.width).toBe(1280);
    expect(await v.alive()).toBe(true);
    v.rfb.pointer(0, 300, 300);
    v.rfb.pointer(1, 300, 300);
    v.rfb.pointer(0, 300, 300);
    await sleep(500);
    expect(await pointerOf(tokenBox)).toEqual({ x: 20, y: 20 });
    // A view ticket does not open control.
    expect(await openViewer(t.view_socket.replace("mode=view", "mode=control"))).toBe(409);
    v.close();
  });

  it("token: the control socket drives while no one holds the screen; a person's takeover closes it and refuses it", async () => {
    const t = await ticket(tokenBox, "control");
    expect(t.control_socket).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/screens\/0\/viewer\?.*mode=control/);
    const drive = await openViewer(t.control_socket);
    if (typeof drive === "number") throw new Error(`refused: ${drive}`);
    const watch = await openViewer(t.view_socket);
    if (typeof watch === "number") throw new Error(`refused: ${watch}`);
    drive.rfb.pointer(0, 400, 300);
    await expect.poll(() => pointerOf(tokenBox), { timeout: 5000 }).toEqual({ x: 400, y: 300 });
    // They count among the screen's viewers (a key drives: no person does).
    expect(await json(await asA(`/v1/boxes/${tokenBox}/screens/0/viewers`))).toMatchObject({ watching: 2, driving: 1, person_driving: false });
    // And on the box page, as the server last heard from the box (it asks every 2 s).
    await expect.poll(() => pageCounts(tokenBox), { timeout: 8000 }).toBe("2 watching · 1 driving");

    await byPerson(tokenBox, "takeover");
    try {
      const closed = await closedWithin(drive, 5000);
      expect(closed?.code).toBe(4403);
      // The URL minted before the takeover no longer opens control; watching goes on.
      expect(await openViewer(t.control_socket)).toBe(409);
      expect(await watch.alive()).toBe(true);
    } finally {
      await byPerson(tokenBox, "giveback");
    }
    const again = await openViewer(t.control_socket);
    if (typeof again === "number") throw new Error(`refused after the give-back: ${again}`);
    again.rfb.pointer(0, 500, 350);
    await expect.poll(() => pointerOf(tokenBox), { timeout: 5000 }).toEqual({ x: 500, y: 350 });
    // A click on it is in the trace, as coarse as the relay's (where, which button, who).
    again.rfb.pointer(1, 510, 360);
    again.rfb.pointer(0, 510, 360);
    await expect
      .poll(async () => {
        const { entries } = await json(await asA(`/v1/boxes/${tokenBox}/trace?limit=500`));
        return (entries as any[]).filter((e) => e.event === "person_input" && e.data?.x === 510).map((e) => ({ ...e.data, screen: e.screen }));
      }, { timeout: 10_000 })
      .toEqual([expect.objectContaining({ kind: "click", x: 510, y: 360, button: 1, by: expect.stringMatching(/^key:/), screen: 0 })]);
    again.close();
    watch.close();
    await expect.poll(() => pageCounts(tokenBox), { timeout: 8000 }).toBe("0 watching · 0 driving");
  });

  it("token: one issuer holds at most 32 direct sockets of a screen (half of the 64 a screen takes); a place frees when one closes", async () => {
    const t = await ticket(tokenBox, "view");
    const open: Exclude<Awaited<ReturnType<typeof openViewer>>, number>[] = [];
    try {
      for (let i = 0; i < 32; i++) {
        const v = await openViewer(t.view_socket);
        if (typeof v === "number") throw new Error(`socket ${i + 1} of 32 refused: ${v}`);
        open.push(v);
      }
      expect(await openViewer(t.view_socket)).toBe(503);
      // Another issuer still gets in.
      const second = await c.createKey(ada, "direct-second-issuer");
      const other = await openViewer((await ticket(tokenBox, "view", apiAs(server, second.secret))).view_socket);
      if (typeof other === "number") throw new Error(`another issuer was refused: ${other}`);
      open.push(other);
      open.shift()!.close();
      await expect.poll(async () => {
        const v = await openViewer(t.view_socket);
        if (typeof v === "number") return v;
        open.push(v);
        return "open";
      }, { timeout: 5000 }).toBe("open");
    } finally {
      for (const v of open) v.close();
    }
  }, 60_000);

  it("token: a forged, expired, other box's or other screen's ticket, or none, is refused", async () => {
    const t = await ticket(tokenBox, "control");
    const url = new URL(t.view_socket);
    const withTicket = (tk: string, mode = "view") => `ws://${url.host}${url.pathname}?${new URLSearchParams({ ticket: tk, mode })}`;
    const tk = url.searchParams.get("ticket")!;
    const secret = agentSecretOf(server, tokenBox);
    const now = Date.now();
    const claims = { box: tokenBox, screen: 0, mode: "control" as const, issuer: "key:x", expires_at_ms: now + 60_000, issued_at_ms: now };
    expect(await openViewer(`ws://${url.host}${url.pathname}`)).toBe(401);
    expect(await openViewer(withTicket(`${tk.slice(0, -2)}${tk.endsWith("AA") ? "AB" : "AA"}`))).toBe(401);
    expect(await openViewer(withTicket(signDirectTicket(secret, { ...claims, expires_at_ms: now - 1000 })))).toBe(401);
    expect(await openViewer(withTicket(signDirectTicket(secret, { ...claims, box: passwordBox })))).toBe(401);
    expect(await openViewer(withTicket(signDirectTicket(agentSecretOf(server, passwordBox), { ...claims, box: passwordBox })))).toBe(401);
    expect(await openViewer(withTicket(signDirectTicket(secret, { ...claims, screen: 1 })))).toBe(409);
    expect(await openViewer(withTicket(signDirectTicket(secret, { ...claims, expires_at_ms: now + 3600_000 })))).toBe(401);
    // Another workspace cannot get a ticket for it at all.
    expect((await asB(`/v1/boxes/${tokenBox}/screens/0/viewer/ticket`, { method: "POST", json: {} })).status).toBe(404);
  });

  it("token: input on a socket opened with a ticket the server never issued (forged with the box's secret, as root in the box can) is not in the trace as that person's", async () => {
    // Root in the box reads its secret and signs its own tickets (docs/security.md, "Root in the
    // box"): it drives its own box. The server names the issuer of a direct socket's input from
    // the box's report; it must not write a person who never held a ticket into the trace.
    const t = await ticket(tokenBox, "control");
    const url = new URL(t.control_socket);
    const now = Date.now();
    const claims = { box: tokenBox, screen: 0, mode: "control" as const, issuer: "user:usr_forged0000000000", expires_at_ms: now + 60_000, issued_at_ms: now };
    const forged = await openViewer(`ws://${url.host}${url.pathname}?${new URLSearchParams({ ticket: signDirectTicket(agentSecretOf(server, tokenBox), claims), mode: "control" })}`);
    const real = await openViewer(t.control_socket);
    if (typeof forged === "number" || typeof real === "number") throw new Error(`refused: ${forged} ${real}`);
    try {
      forged.rfb.pointer(1, 523, 371);
      forged.rfb.pointer(0, 523, 371);
      await sleep(300);
      // After it, a click by the issued ticket: once that is in the trace, the forged one was collected too.
      real.rfb.pointer(1, 524, 372);
      real.rfb.pointer(0, 524, 372);
      const inputs = async () => {
        const { entries } = await json(await asA(`/v1/boxes/${tokenBox}/trace?limit=500`));
        return (entries as any[]).filter((e) => e.event === "person_input" && (e.data?.x === 523 || e.data?.x === 524)).map((e) => ({ x: e.data.x, by: e.data.by }));
      };
      await expect.poll(async () => (await inputs()).some((i) => i.x === 524), { timeout: 15_000 }).toBe(true);
      expect(await inputs()).toEqual([{ x: 524, by: expect.stringMatching(/^key:/) }]);
    } finally {
      forged.close();
      real.close();
    }
  });

  it("token: revoking a key closes its direct sockets at once, and its URLs open nothing after", async () => {
    const doomed = await c.createKey(ada, "direct-doomed");
    const asDoomed = apiAs(server, doomed.secret);
    const t = await ticket(tokenBox, "control", asDoomed);
    const watch = await openViewer(t.view_socket);
    const drive = await openViewer(t.control_socket);
    if (typeof watch === "number" || typeof drive === "number") throw new Error(`refused: ${watch} ${drive}`);
    const csrf = c.csrfIn(await c.page(ada, "/keys"));
    expect((await c.form(ada, "/keys?index", { intent: "revoke", id: doomed.id, csrf })).status).toBe(200);
    const [w, d] = await Promise.all([closedWithin(watch, 5000), closedWithin(drive, 5000)]);
    expect(w?.code).toBe(4401);
    expect(d?.code).toBe(4401);
    // The URLs were signed before the key was revoked: the box refuses them from now on.
    expect(await openViewer(t.view_socket)).toBe(401);
    expect(await openViewer(t.control_socket)).toBe(401);
  });

  it("token: a key's direct sockets end when the key expires, as its relay sockets do, and its URLs open nothing after", async () => {
    const short = await c.createKey(ada, "direct-expiring");
    // The key expires a few seconds from now (moved in the store, as auth-matrix.test.ts does), with no event to tell anyone.
    const expiresAtMs = Date.now() + 4000;
    const db = openStore(server);
    db.prepare("update api_key set expires_at_ms = ? where id = ?").run(expiresAtMs, short.id);
    db.close();
    const t = await ticket(tokenBox, "control", apiAs(server, short.secret));
    const watch = await openViewer(t.view_socket);
    const relayed = await openViewer(socketOfServer(t.ticket));
    if (typeof watch === "number" || typeof relayed === "number") throw new Error(`refused: ${watch} ${relayed}`);
    const [w, r] = await Promise.all([closedWithin(watch, 10_000), closedWithin(relayed, 10_000)]);
    // Before: the relay's socket closed at the key's expiry (4401); the box's stayed open until its ticket's 15 minutes.
    expect(r?.code).toBe(4401);
    expect(w?.code, "the direct socket is still open after the key expired").toBe(4401);
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAtMs);
    expect(await openViewer(t.view_socket)).toBe(401);
  });

  it("another box cannot reach a socket published on every address (bind any), though this machine can", async () => {
    const t = await ticket(passwordBox, "view");
    const port = new URL(t.view_socket).port;
    const nets = (await docker.getContainer(`holm-${tokenBox}`).inspect()).NetworkSettings.Networks;
    const gateway = Object.values(nets)[0]!.Gateway;
    const boxIp = Object.values((await docker.getContainer(`holm-${passwordBox}`).inspect()).NetworkSettings.Networks)[0]!.IPAddress;
    const reach = (host: string, p: string | number) =>
      execIn(tokenBox, ["bash", "-c", `timeout 3 bash -c 'exec 3<>/dev/tcp/${host}/${p}' 2>/dev/null && echo open || echo closed`]);
    // From the token box: the host's address on its bridge, and the other box directly.
    expect((await reach(gateway, port)).out.trim()).toBe("closed");
    expect((await reach(boxIp, 5810)).out.trim()).toBe("closed");
    // From this machine, on the bridge gateway's address (not loopback): open, as bind any asks.
    const here = await RfbClient.overWebSocket(t.view_socket.replace("127.0.0.1", gateway));
    await here.handshake(1, (ch) => vncChallengeResponse(t.password, ch));
    here.close();
  });

  it("password: watching with the box's password, not without it; never control", async () => {
    const t = await ticket(passwordBox, "control");
    expect(t.view_socket).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/screens\/0\/viewer$/);
    expect(t.password).toMatch(/^[!-~]{8}$/);
    // Control of a password box goes through the server's relay, which honours takeovers.
    expect(t.control_socket).toContain(`/v1/boxes/${passwordBox}/screens/0/viewer/socket`);
    await moveTo(passwordBox, 30, 30);

    const good = await RfbClient.overWebSocket(t.view_socket);
    await good.handshake(1, (ch) => vncChallengeResponse(t.password, ch));
    good.requestUpdate(false, 0, 0, 8, 8);
    await good.nextUpdate();
    good.pointer(1, 600, 400);
    good.pointer(0, 600, 400);
    await sleep(500);
    expect(await pointerOf(passwordBox)).toEqual({ x: 30, y: 30 });
    good.close();

    const bad = await RfbClient.overWebSocket(t.view_socket);
    await expect(bad.handshake(1, (ch) => vncChallengeResponse("wrong!!!", ch))).rejects.toThrow(/security result 1/);
    expect((await bad.closed).code).toBe(4401);
    // Security None is not offered.
    const none = await RfbClient.overWebSocket(t.view_socket);
    await expect(none.handshake(1)).rejects.toThrow(/no security type None/);
    none.close();
    expect(await openViewer(`${t.view_socket}?mode=control`)).toBe(409);
  });

  it("password: a socket that has not given the password holds no connection to x11vnc, and closes if it never does", async () => {
    const t = await ticket(passwordBox, "view");
    // Connections accepted on x11vnc's port (5900) inside the box, from /proc/net/tcp (state 01: established).
    const onX11vnc = async () => {
      const { out } = await execIn(passwordBox, ["cat", "/proc/net/tcp", "/proc/net/tcp6"]);
      return out.split("\n").filter((l) => /^\s*\d+: [0-9A-F]+:170C [0-9A-F]+:[0-9A-F]+ 01 /.test(l)).length;
    };
    expect(await onX11vnc()).toBe(0);
    // Anyone who reaches the port (bind any: the network) opens sockets and never answers the challenge.
    const idle = await Promise.all(Array.from({ length: 10 }, () => RfbClient.overWebSocket(t.view_socket)));
    try {
      await sleep(1500);
      // Before: each of them had the agent open (and log in to) an x11vnc connection, kept as long as the socket stayed.
      expect(await onX11vnc()).toBe(0);
      // One that gives the password gets its own connection, and the screen.
      const good = await RfbClient.overWebSocket(t.view_socket);
      await good.handshake(1, (ch) => vncChallengeResponse(t.password, ch));
      good.requestUpdate(false, 0, 0, 8, 8);
      await good.nextUpdate();
      expect(await onX11vnc()).toBe(1);
      good.close();
      // Those that never answer are closed (4400) once the handshake's time is up.
      const closes = await Promise.all(idle.map(async (v) => (await closedWithin(v, 15_000))?.code));
      expect(closes).toEqual(idle.map(() => 4400));
    } finally {
      for (const v of idle) v.close();
    }
  });

  it("token: a key revoked while the box is paused or stopped opens nothing once it runs again; a ticket whose holder kept access still does", async () => {
    const lifecycle = async (op: "pause" | "resume" | "stop") => {
      const res = await asA(`/v1/boxes/${tokenBox}/${op}`, { method: "POST" });
      expect(res.status, `${op}: ${JSON.stringify(await json(res))}`).toBe(200);
    };
    const keyTicket = async (name: string) => {
      const key = await c.createKey(ada, name);
      return { key, t: await ticket(tokenBox, "control", apiAs(server, key.secret)) };
    };
    const revoke = async (id: string) => {
      const csrf = c.csrfIn(await c.page(ada, "/keys"));
      expect((await c.form(ada, "/keys?index", { intent: "revoke", id, csrf })).status).toBe(200);
    };
    // Paused: frozen while the key is revoked, for longer than a check waits for a paused box (5 s).
    const paused = await keyTicket("direct-paused");
    const kept = await ticket(tokenBox, "control");
    await lifecycle("pause");
    await revoke(paused.key.id);
    await sleep(6500);
    await lifecycle("resume");
    expect(await openViewer(paused.t.view_socket)).toBe(401);
    expect(await openViewer(paused.t.control_socket)).toBe(401);
    const still = await openViewer(kept.view_socket);
    expect(typeof still, "a ticket from before the pause whose holder kept access").toBe("object");
    if (typeof still === "object") still.close();

    // Stopped: the box's agent starts afresh and has forgotten what it was told. The old tickets,
    // sent to the box's new port, are refused all the same.
    const stopped = await keyTicket("direct-stopped");
    const keptToo = await ticket(tokenBox, "view");
    await revoke(stopped.key.id);
    // The revocation reaches the running box a moment after the form answers.
    await expect.poll(() => refusal(stopped.t.view_socket), { timeout: 5000 }).toBe(401);
    await lifecycle("stop");
    await lifecycle("resume");
    const host = new URL((await ticket(tokenBox, "view")).view_socket).host;
    const moved = (u: string) => Object.assign(new URL(u), { host }).toString();
    expect(await openViewer(moved(stopped.t.view_socket))).toBe(401);
    expect(await openViewer(moved(stopped.t.control_socket))).toBe(401);
    const again = await openViewer(moved(keptToo.view_socket));
    expect(typeof again, "a ticket from before the stop whose holder kept access").toBe("object");
    if (typeof again === "object") again.close();
  }, 120_000);

  it("password: a key given the password and then revoked watches no more: the box's password changes, the old one opens nothing, also after a stop", async () => {
    /** Watches with `password` on `url`: the RFB client once in, or the security result's refusal. */
    const watchWith = async (url: string, password: string) => {
      const v = await RfbClient.overWebSocket(url);
      try {
        await v.handshake(1, (ch) => vncChallengeResponse(password, ch));
      } catch (err) {
        v.close();
        return String(err);
      }
      return v;
    };
    const lifecycle = async (op: "stop" | "resume") => {
      const res = await asA(`/v1/boxes/${passwordBox}/${op}`, { method: "POST" });
      expect(res.status, `${op}: ${JSON.stringify(await json(res))}`).toBe(200);
    };
    const doomed = await c.createKey(ada, "password-doomed");
    const old = await ticket(passwordBox, "view", apiAs(server, doomed.secret));
    const kept = await watchWith(old.view_socket, old.password);
    if (typeof kept === "string") throw new Error(`the password opened nothing before the revocation: ${kept}`);
    const csrf = c.csrfIn(await c.page(ada, "/keys"));
    expect((await c.form(ada, "/keys?index", { intent: "revoke", id: doomed.id, csrf })).status).toBe(200);
    // The socket the revoked key's password opened closes; the password opens nothing after.
    expect((await closedWithin(kept, 5000))?.code).toBe(4401);
    expect(await watchWith(old.view_socket, old.password)).toMatch(/security result 1/);
    // Whoever kept access asks again and gets the new password, which opens the screen.
    const fresh = await ticket(passwordBox, "view");
    expect(fresh.password).toMatch(/^[!-~]{8}$/);
    expect(fresh.password).not.toBe(old.password);
    const watching = await watchWith(fresh.view_socket, fresh.password);
    if (typeof watching === "string") throw new Error(`the new password opened nothing: ${watching}`);
    watching.requestUpdate(false, 0, 0, 8, 8);
    await watching.nextUpdate();
    watching.close();

    // A stopped box's agent starts afresh: it is told the new password when it runs again.
    await lifecycle("stop");
    await lifecycle("resume");
    const after = await ticket(passwordBox, "view");
    expect(after.password).toBe(fresh.password);
    expect(await watchWith(after.view_socket, old.password)).toMatch(/security result 1/);
    const again = await watchWith(after.view_socket, after.password);
    if (typeof again === "string") throw new Error(`the new password opened nothing after the stop: ${again}`);
    again.close();
  }, 120_000);
});
