import fs from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { RfbClient, viewerTicket } from "../../bench/rfb-client";
import { handshake } from "../support/http";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { until } from "../support/until";

// Every viewer socket is an x11vnc client, and x11vnc serves its clients one after the other: one
// ticket reused 1,100 times slowed every other viewer's first frame from ~1 s to 5–6 s. A screen
// takes HOLM_VIEWERS_PER_SCREEN sockets through the server, one issuer half of them.

let server: TestServer;
let box: { id: string };
const clients: RfbClient[] = [];

beforeAll(async () => {
  server = await startServer({ HOLM_VIEWERS_PER_SCREEN: "4" });
  const res = await server.api("/v1/boxes", { method: "POST", json: { spec: { desktop: { screens: 2 } } } });
  box = await json(res);
  expect(res.status, JSON.stringify(box)).toBe(200);
});

afterAll(async () => {
  for (const c of clients) c.close();
  await server?.stop();
  await removeTestBoxes();
});

/** Opens a viewer and greets it; the HTTP status of a refused upgrade otherwise. */
async function open(url: string): Promise<RfbClient | number> {
  try {
    const c = await RfbClient.overWebSocket(url);
    await c.handshake();
    clients.push(c);
    return c;
  } catch (e) {
    return (e as { status?: number }).status ?? -1;
  }
}

it("one issuer gets half a screen's viewer places, refused 503 past them, and a place again once one closes", async () => {
  const t0 = await viewerTicket(server, box.id, 0, { mode: "view" });
  const first = await open(t0.view_socket);
  const second = await open(t0.view_socket);
  expect(first).toBeInstanceOf(RfbClient);
  expect(second).toBeInstanceOf(RfbClient);
  // The third, with the same ticket or a new one of the same issuer, is refused.
  expect(await open(t0.view_socket)).toBe(503);
  expect(await open((await viewerTicket(server, box.id, 0, { mode: "view" })).view_socket)).toBe(503);
  // Another screen has its own places.
  const t1 = await viewerTicket(server, box.id, 1, { mode: "view" });
  expect(await open(t1.view_socket)).toBeInstanceOf(RfbClient);
  // The viewers still get frames.
  (first as RfbClient).requestUpdate(false, 0, 0, 16, 16);
  expect((await (first as RfbClient).nextUpdate()).rects.length).toBeGreaterThan(0);
  // One closes: its place is free again.
  (second as RfbClient).close();
  await (second as RfbClient).closed;
  const again = await until("a place once a viewer closed", () => open(t0.view_socket), (c) => c instanceof RfbClient);
  expect(again).toBeInstanceOf(RfbClient);
});

it("a handshake the WebSocket server refuses takes no place and leaves no VNC connection open; the issuer's places still open", async () => {
  const t1 = await viewerTicket(server, box.id, 1, { mode: "view" });
  const fds = () => fs.readdirSync(`/proc/${server.pid}/fd`).length;
  const before = fds();
  const answers: { status: number; text: string }[] = [];
  for (let i = 0; i < 20; i++) {
    answers.push(await handshake(t1.view_socket, { "sec-websocket-version": "13" }));
    answers.push(await handshake(t1.view_socket, { "sec-websocket-version": "13", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==", "sec-websocket-protocol": "a b" }));
  }
  // Each once left the server's own VNC connection open after the place was given back: past
  // HOLM_VIEWERS_PER_SCREEN, x11vnc clients no limit counted (40 handshakes, 36 open files).
  await until("the server's open files", () => fds() - before, (n) => n < 10, 5000);
  for (const a of answers) expect(a.status).toBe(400);
  expect(JSON.parse(answers[0]!.text)).toMatchObject({ code: "bad_request", retryable: false });
  expect(await open(t1.view_socket)).toBeInstanceOf(RfbClient);
});
