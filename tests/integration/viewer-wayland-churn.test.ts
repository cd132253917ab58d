import { afterAll, beforeAll, expect, it } from "vitest";
import { RfbClient, viewerTicket } from "../../bench/rfb-client";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// A person's viewer of a Wayland box opens while someone copies or pastes there (a CI failure:
// a fresh viewer's socket closed 4502 "the box's VNC server closed the connection" just after
// the suite's paste test). wayvnc 0.5 (neatvnc 0.5.4) sends each clipboard change to every
// client, one still in its handshake included; the agent's VNC front (vnc-front.ts, ADR 0030)
// read that ServerCutText as the handshake's next message and hung up. And a paste sent to a
// client that had just hung up killed wayvnc (SIGSEGV), and the box with it (closeWayvnc).

let server: TestServer;
let box: { id: string };

beforeAll(async () => {
  server = await startServer();
  const res = await server.api("/v1/boxes", { method: "POST", json: { spec: { desktop: { server: "wayland" } } } });
  box = await json(res);
  expect(res.status, JSON.stringify(box)).toBe(200);
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `f`, failing after 5 s: a viewer whose handshake went astray waits for bytes that never come. */
async function inTime(what: string, f: () => Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([f(), new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: nothing within 5 s`)), 5000)))]);
  } finally {
    clearTimeout(timer);
  }
}

it("viewers that open while someone pastes are all served, each seeing the screen", async () => {
  const ctl = await viewerTicket(server, box.id, 0);
  const paster = await RfbClient.overWebSocket(ctl.control_socket!);
  const viewers: RfbClient[] = [];
  try {
    await paster.handshake(0);
    // Every paste changes the Wayland clipboard, and wayvnc tells every client of it.
    let pasting = true;
    const pastes = (async () => {
      for (let i = 0; pasting; i++) {
        paster.cut(`paste ${i}`);
        await sleep(5);
      }
    })();
    const failures: string[] = [];
    const view = await viewerTicket(server, box.id, 0, { mode: "view" });
    for (let round = 0; round < 40; round++) {
      try {
        const c = await RfbClient.overWebSocket(view.view_socket);
        viewers.push(c);
        await inTime(`viewer ${round}`, async () => {
          const init = await c.handshake(0);
          // What a viewer of this screen must see: the screen's real size.
          expect([init.width, init.height]).toEqual([paster.init.width, paster.init.height]);
          c.requestUpdate(false);
          await c.nextUpdate();
        });
      } catch (e) {
        failures.push(`viewer ${round}: ${(e as Error).message}`);
      }
      viewers.pop()?.close();
    }
    pasting = false;
    await pastes;
    expect(failures).toEqual([]);
  } finally {
    paster.close();
    for (const c of viewers) c.close();
  }
});
