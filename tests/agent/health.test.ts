// /health probes the real display, VNC and CDP per screen; auth and malformed input never crash
// the agent.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import http from "node:http";
import { spawn, type ChildProcess } from "node:child_process";
import { batch, cleanup, display, freePort, startAgent, startXvfb, track, until, type Agent } from "./harness";

const D = display(156); // screens 0 and 1 are :156 and :157
let agent: Agent;
let vncBase: number;
let cdpBase: number;
let cdp: http.Server;
let xvfb1: ChildProcess;

beforeAll(async () => {
  await startXvfb(D);
  xvfb1 = await startXvfb(D + 1);
  vncBase = await freePort();
  cdpBase = await freePort();
  track(spawn("x11vnc", ["-display", `:${D}`, "-rfbport", String(vncBase), "-nopw", "-forever", "-shared", "-quiet", "-noxdamage", "-localhost"], { stdio: "ignore", detached: true }));
  // A stand-in for Chromium's DevTools endpoint on screen 0 only.
  cdp = http.createServer((req, res) => {
    res.writeHead(req.url === "/json/version" ? 200 : 404, { "content-type": "application/json" });
    res.end('{"Browser":"Fake/1.0"}');
  });
  await new Promise<void>((r) => cdp.listen(cdpBase, "127.0.0.1", r));
  agent = await startAgent({ HOLM_DISPLAY_BASE: String(D), HOLM_SCREENS: "2", HOLM_VNC_PORT_BASE: String(vncBase), HOLM_CDP_PORT_BASE: String(cdpBase) });
});
afterAll(async () => {
  cdp?.close();
  await cleanup();
});

async function health(): Promise<{ status: number; body: any; ms: number }> {
  const t = performance.now();
  const res = await fetch(`${agent.url}/health`);
  return { status: res.status, body: await res.json(), ms: performance.now() - t };
}

describe("health", () => {
  it("reports each screen's X, VNC and CDP, and needs no token", async () => {
    const h = await until(async () => {
      const r = await health();
      return r.body.screens[0].vnc ? r : null;
    }, "x11vnc", 10_000, 100);
    expect(h.status).toBe(200);
    expect(h.body).toEqual({
      ok: true,
      screens: [
        { screen: 0, display: `:${D}`, x: true, vnc: true, cdp: true },
        { screen: 1, display: `:${D + 1}`, x: true, vnc: false, cdp: false },
      ],
    });
  });

  it("answers 503 when a display dies, and recovers when it comes back", async () => {
    xvfb1.kill("SIGKILL");
    const down = await until(async () => {
      const r = await health();
      return r.status === 503 ? r : null;
    }, "503", 5000, 50);
    expect(down.body.ok).toBe(false);
    expect(down.body.screens[1]).toMatchObject({ screen: 1, x: false });
    expect(down.body.screens[0].x).toBe(true);
    // A batch on the dead screen fails cleanly.
    const r = await batch(agent, 1, { actions: [{ type: "click", at: { x: 1, y: 1 } }] });
    expect(r.results[0]).toMatchObject({ ok: false, code: "failed" });
    await startXvfb(D + 1);
    const up = await until(async () => {
      const h = await health();
      return h.status === 200 ? h : null;
    }, "200 again", 5000, 50);
    expect(up.body.screens[1].x).toBe(true);
    const again = await batch(agent, 1, { actions: [{ type: "click", at: { x: 1, y: 1 } }, { type: "cursor" }] });
    expect(again.results[1]).toMatchObject({ ok: true, x: 1, y: 1 });
  });
});

describe("auth", () => {
  it("refuses an unsigned request, even with the secret as a bearer token, with 401 JSON (auth.test.ts has the rest)", async () => {
    const variants: Record<string, string>[] = [
      {},
      { authorization: "Bearer nope" },
      { authorization: `Bearer ${agent.secret}` },
      { authorization: `Basic ${agent.secret}` },
    ];
    for (const headers of variants) {
      const res = await fetch(`${agent.url}/screens/0/cursor`, { headers });
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ code: "unauthorized" });
    }
    expect((await agent.call("GET", "/screens/0/cursor")).status).toBe(200);
  });
});

describe("malformed input", () => {
  const cases: Array<[string, string, string | undefined, number, RegExp]> = [
    ["POST", "/screens/0/batch", "{not json", 400, /not valid JSON/],
    ["POST", "/screens/0/batch", JSON.stringify({ actions: "click" }), 400, /actions/],
    ["POST", "/screens/0/batch", JSON.stringify({ actions: [{ type: "explode" }] }), 400, /step 0 \(explode\)/],
    ["POST", "/screens/0/batch", JSON.stringify({ actions: [{ type: "move" }, { type: "click", at: { x: "a", y: 1 } }] }), 400, /step 0 \(move\).*to/],
    ["POST", "/screens/0/batch", JSON.stringify({ actions: [{ type: "click", at: { x: 1, y: 2 } }, { type: "wait", ms: 999999 }] }), 400, /step 1 \(wait\)/],
    ["POST", "/screens/0/batch", JSON.stringify([1, 2, 3]), 400, /expected object/],
    ["POST", "/screens/0/batch", "null", 400, /./],
    ["POST", "/screens/9/batch", JSON.stringify({ actions: [] }), 404, /no screen 9/],
    ["POST", "/screens/x/batch", JSON.stringify({ actions: [] }), 404, /no screen/],
    ["GET", "/nowhere", undefined, 404, /no route/],
    ["DELETE", "/screens/0/batch", undefined, 400, /not allowed/],
    ["POST", "/exec", JSON.stringify({ argv: [] }), 400, /argv/],
    ["PUT", "/files", JSON.stringify({ path: "/tmp/x", contents_base64: "***" }), 400, /base64/],
    ["POST", "/files/grep", JSON.stringify({ pattern: "(" }), 400, /regular expression/],
    // One strict vocabulary on both sides (app/protocol/actions.ts): a field the agent does not
    // know is refused, never dropped and the rest done.
    ["POST", "/screens/0/batch", JSON.stringify({ actions: [{ type: "click", at: { x: 1, y: 2 }, buton: "right" }] }), 400, /step 0 \(click\).*unknown key "buton"/],
    ["POST", "/screens/0/batch", JSON.stringify({ actions: [], frame_options: { scale: 50 } }), 400, /unknown key "frame_options"/],
    ["POST", "/screens/0/batch", JSON.stringify({ actions: [{ type: "capture", what: { tab: "t", window: "x" } }] }), 400, /what\.tab/],
    ["POST", "/exec", JSON.stringify({ argv: ["true"], cwd: "/" }), 400, /unknown key "cwd"/],
  ];
  it.each(cases)("%s %s %s → %i", async (method, p, body, status, message) => {
    const r = await agent.call(method, p, body);
    expect(r.status).toBe(status);
    expect(r.body.code).toBe(status === 404 ? "not_found" : "bad_request");
    expect(r.body.message).toMatch(message);
  });

  it("did nothing for a refused batch, and is still alive", async () => {
    await batch(agent, 0, { actions: [{ type: "move", to: { x: 3, y: 3 } }] });
    await agent.call("POST", "/screens/0/batch", { actions: [{ type: "move", to: { x: 50, y: 50 } }, { type: "bogus" }] });
    const c = await agent.call("GET", "/screens/0/cursor");
    expect(c.body).toEqual({ x: 3, y: 3 });
    expect(agent.proc.exitCode).toBeNull();
    expect((await health()).status).toBe(200);
  });
});
