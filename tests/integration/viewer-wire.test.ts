import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RfbClient, viewerTicket } from "../../bench/rfb-client";
import { VIEWER_CLOSE } from "~/protocol/viewer-socket";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// What a viewer's bytes may do to a screen's VNC server, on both desktops, through the server's
// relay and a box's direct socket: a message the RFB filter passes must not take the screen away from everyone else.
// Found by sending every client message a viewer may send, in view mode: a SetPixelFormat with 0
// bits per pixel (RFC 6143 allows 8, 16 or 32), or a depth of 0 or above its bits per pixel (the
// RFC: at most bits per pixel), made wayvnc exit, and with it the whole Wayland box ("its VNC
// server exited"); x11vnc only dropped that client. The filter now refuses such a pixel format,
// in both modes, as bytes it cannot trust (4400).

/** The paths a viewer's bytes take: the relay to x11vnc, the relay to wayvnc (through the agent's
 * VNC front), and a Wayland box's own direct viewer socket (policy.auth token, ADR 0029). */
const SPECS: Record<string, object> = {
  x11: {},
  wayland: { desktop: { server: "wayland" } },
  "wayland, direct socket": { desktop: { server: "wayland" }, policy: { auth: "token" } },
};

let server: TestServer;
const boxes: Record<string, any> = {};
const api = (p: string, init?: RequestInit & { json?: unknown }) => server.api(p, init);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  server = await startServer({});
  await Promise.all(
    Object.entries(SPECS).map(async ([name, spec]) => {
      const res = await api("/v1/boxes", { method: "POST", json: { spec } });
      const out = await json(res);
      expect(res.status, JSON.stringify(out)).toBe(200);
      boxes[name] = out;
    }),
  );
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

async function open(boxId: string, mode: "view" | "control") {
  const t = await viewerTicket(server, boxId, 0, { mode });
  const c = await RfbClient.overWebSocket(mode === "control" ? t.control_socket! : t.view_socket);
  await c.handshake(0);
  return c;
}

/** A full update reaches this viewer (within 5 s), or why not. */
async function frame(c: RfbClient): Promise<string> {
  c.requestUpdate(false, 0, 0, 16, 16);
  return Promise.race([
    c.nextUpdate().then(() => "frame"),
    c.closed.then((x) => `closed ${x.code} ${x.reason}`),
    sleep(5000).then(() => "no frame in 5 s"),
  ]);
}

/** SetPixelFormat: true colour, 8 bits a channel, at `bpp` bits per pixel. */
function pixelFormat(bpp: number, depth: number) {
  const b = Buffer.alloc(20);
  b[0] = 0;
  b[4] = bpp;
  b[5] = depth;
  b[7] = 1;
  for (const [i, shift] of [16, 8, 0].entries()) {
    b.writeUInt16BE(255, 8 + 2 * i);
    b[14 + i] = shift;
  }
  return b;
}

describe.each(Object.keys(SPECS))("%s: a viewer's pixel format", (desktop) => {
  it("of 0 bits per pixel, or a depth of 0 or above it, is refused (4400) in view and control mode; the others keep watching and the box runs", async () => {
    const box = boxes[desktop];
    const watcher = await open(box.id, "view");
    try {
      expect(await frame(watcher)).toBe("frame");
      // 0 bits per pixel; 32 with a depth of 0, or of more than 32: each of them made wayvnc exit.
      for (const [bpp, depth] of [[0, 0], [32, 0], [32, 40]] as const) {
        for (const mode of ["view", "control"] as const) {
          const what = `${mode}, ${bpp} bits per pixel, depth ${depth}`;
          const attacker = await open(box.id, mode);
          if (desktop.includes("direct")) expect(attacker.ws.url).not.toContain(server.base.replace(/^http/, "ws"));
          attacker.raw(pixelFormat(bpp, depth));
          attacker.raw(Buffer.from([2, 0, 0, 3, 0, 0, 0, 16, 0, 0, 0, 7, 0, 0, 0, 0])); // SetEncodings: ZRLE, Tight, raw
          attacker.requestUpdate(false);
          const closed = await Promise.race([attacker.closed, sleep(5000).then(() => ({ code: 0, reason: "still open after 5 s" }))]);
          attacker.close();
          await sleep(500);
          const got = await json(await api(`/v1/boxes/${box.id}`));
          expect(got.state, `${what}: ${JSON.stringify(got)}`).toBe("ready");
          expect(await frame(watcher), what).toBe("frame");
          expect(closed.code, `${what}: ${closed.reason}`).toBe(VIEWER_CLOSE.protocol);
          expect(closed.reason).toMatch(/bits per pixel|depth/);
        }
      }
      // A format a real viewer asks for (noVNC's own: 32 bits per pixel, depth 24) still passes.
      const good = await open(box.id, "view");
      good.raw(pixelFormat(32, 24));
      expect(await frame(good)).toBe("frame");
      good.close();
    } finally {
      watcher.close();
    }
  }, 60_000);
});
