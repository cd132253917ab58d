import { afterAll, beforeAll, expect, it } from "vitest";
import WebSocket from "ws";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// Past the CDP sockets' budget (HOLM_CDP_BUFFER_MIB) the server closes the sockets furthest
// behind (docs/decisions/0011-cdp-proxy.md, "Limits"), never one whose client reads what it is
// sent as it comes: a large answer (a screenshot, a page's HTML) waits to be written for a
// moment only, however large, while a client that reads nothing holds its bytes for good.

const MiB = 1024 * 1024;
let server: TestServer;
let box: { id: string };
const sockets: WebSocket[] = [];

beforeAll(async () => {
  server = await startServer({
    HOLM_CDP_SOCKETS_PER_SCREEN: "16",
    HOLM_CDP_SOCKETS_PER_ISSUER: "16",
    // The message bound as shipped; a budget three stalled sockets fit in, and not one large answer more.
    HOLM_CDP_MESSAGE_MIB: "32",
    HOLM_CDP_BUFFER_MIB: "40",
  });
  const res = await server.api("/v1/boxes", { method: "POST", json: {} });
  box = await json(res);
  expect(res.status, JSON.stringify(box)).toBe(200);
}, 180_000);

afterAll(async () => {
  for (const ws of sockets) ws.terminate();
  await server?.stop();
  await removeTestBoxes();
});

/** The page target's socket through the proxy, with a new CDP address. */
async function pageSocket(): Promise<WebSocket> {
  const res = await server.api(`/v1/boxes/${box.id}/cdp`, { method: "POST" });
  const { url } = await json(res);
  expect(res.status).toBe(200);
  const list = (await (await fetch(`${url}/json/list`)).json()) as { type: string; webSocketDebuggerUrl: string }[];
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(list.find((t) => t.type === "page")!.webSocketDebuggerUrl, { perMessageDeflate: false, maxPayload: 0 });
    ws.once("open", () => (sockets.push(ws), resolve(ws)));
    ws.once("error", reject);
  });
}

type End = { code: number | "open"; reason: string };
const ended = (ws: WebSocket) => new Promise<End>((resolve) => ws.once("close", (code, reason) => resolve({ code, reason: String(reason) })));
const evaluate = (id: number, bytes: number) => JSON.stringify({ id, method: "Runtime.evaluate", params: { expression: `'x'.repeat(${bytes})`, returnByValue: true } });

it("a client reading a large answer as it comes is not closed while clients that read nothing stay", async () => {
  // Three clients ask for forty 1 MiB answers each and read none: each socket holds up to 8 MiB
  // of them waiting (the rest wait in the box, unread), some 27 MiB of the budget's 40 together.
  const slow = await Promise.all([0, 1, 2].map(() => pageSocket()));
  const slowEnds = slow.map(ended);
  for (const ws of slow) {
    ws.pause();
    for (let id = 1; id <= 40; id++) ws.send(evaluate(id, MiB));
  }
  await new Promise((r) => setTimeout(r, 5000));

  // A client that reads at once asks for answers of 20 MiB, each read as it comes.
  const prompt = await pageSocket();
  let promptEnd: End | undefined;
  void ended(prompt).then((e) => (promptEnd = e));
  for (let id = 1; id <= 3; id++) {
    const size = await new Promise<number | undefined>((resolve) => {
      prompt.once("message", (d: Buffer) => resolve(d.length));
      prompt.once("close", () => resolve(undefined));
      prompt.send(evaluate(id, 20 * MiB));
    });
    expect(size ?? 0, `answer ${id} to the client reading as it comes; it ended ${JSON.stringify(promptEnd)}`).toBeGreaterThan(20 * MiB);
  }
  prompt.close();

  // One of those that read nothing was closed instead, 1013 naming the budget.
  for (const ws of slow) ws.resume();
  const ends = await Promise.all(slowEnds.map((e) => Promise.race([e, new Promise<End>((r) => setTimeout(() => r({ code: "open", reason: "" }), 10_000))])));
  const closed = ends.filter((e) => e.code === 1013);
  expect(closed.length, JSON.stringify(ends)).toBeGreaterThan(0);
  for (const e of closed) expect(e.reason).toMatch(/HOLM_CDP_BUFFER_MIB/);
  for (const ws of sockets.splice(0)) ws.terminate();
}, 120_000);
