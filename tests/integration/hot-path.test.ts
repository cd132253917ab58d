import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { raw } from "../support/http";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// The hot /v1 routes (server/hot-path.ts, ADR 0015) are served in front of React Router by the
// same route handlers. What a caller sees must not tell the two ways in apart: the URL the
// answer is built from, refusals of bad input, a client that goes away mid-body, and the calls
// to the box over kept-alive connections.

let server: TestServer;
let box: any;
const auth = () => ({ authorization: `Bearer ${server.token}` });
const actions = () => `/v1/boxes/${box.id}/screens/0/actions`;

beforeAll(async () => {
  server = await startServer();
  box = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
  expect(box.state).toBe("ready");
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

describe("hot routes", () => {
  it("GET /v1/boxes/{id} builds its URLs from the Host the caller used, as the list's box is the same box", async () => {
    const port = new URL(server.base).port;
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
      const res = await raw(server.base, "GET", `/v1/boxes/${box.id}`, { ...auth(), host });
      expect(res.status, res.text).toBe(200);
      const got = JSON.parse(res.text);
      expect(got.id).toBe(box.id);
      expect(new URL(got.devtools_url).host).toBe(host);
    }
    const list = await json(await server.api("/v1/boxes"));
    expect(list.boxes.map((b: any) => b.id)).toContain(box.id);
  });

  it("a batch refuses an unknown key, bad JSON and a missing credential with the seed's codes; a wrong method is 405", async () => {
    const unknown = await server.api(actions(), { method: "POST", json: { actions: [], nope: 1 } });
    expect(unknown.status).toBe(400);
    expect((await json(unknown)).code).toBe("bad_request");
    const bad = await raw(server.base, "POST", actions(), { ...auth(), "content-type": "application/json" }, "{not json");
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text).code).toBe("bad_request");
    const anon = await raw(server.base, "POST", actions(), { "content-type": "application/json" }, "{}");
    expect(anon.status).toBe(401);
    expect(JSON.parse(anon.text).code).toBe("unauthorized");
    const put = await raw(server.base, "PUT", actions(), { ...auth(), "content-type": "application/json" }, "{}");
    expect(put.status).toBe(405);
    expect(put.headers.allow).toBe("POST");
    const noBox = await server.api(`/v1/boxes/box_${"0".repeat(32)}/screens/0/actions`, { method: "POST", json: { actions: [] } });
    expect(noBox.status).toBe(404);
  });

  it("a client that leaves in the middle of its body is no harm: the next batch runs", async () => {
    const { hostname, port } = new URL(server.base);
    await new Promise<void>((resolve) => {
      const s = net.connect(Number(port), hostname, () => {
        s.write(
          `POST ${actions()} HTTP/1.1\r\nhost: ${hostname}:${port}\r\nauthorization: Bearer ${server.token}\r\n` +
            `content-type: application/json\r\ncontent-length: 1000\r\n\r\n{"actions":[`,
        );
        setTimeout(() => s.destroy(), 200);
      });
      s.on("close", () => resolve());
      s.on("error", () => resolve());
    });
    const res = await server.api(actions(), { method: "POST", json: { actions: [{ type: "move", to: { x: 20, y: 20 } }] } });
    expect(res.status).toBe(200);
    expect((await json(res)).results).toEqual([expect.objectContaining({ ok: true })]);
  });

  it("many batches in a row and side by side all reach the box over the kept connections", async () => {
    const one = (x: number) =>
      server.api(actions(), { method: "POST", json: { actions: [{ type: "move", to: { x, y: 30 } }], want: ["cursor"] } }).then(json);
    for (let i = 0; i < 10; i++) expect((await one(40 + i)).cursor).toEqual({ x: 40 + i, y: 30 });
    // Side by side: one screen runs them one after another; every one answers.
    const all = await Promise.all(Array.from({ length: 8 }, (_, i) => one(100 + i)));
    expect(all.every((r) => r.results?.[0]?.ok === true)).toBe(true);
    const frame = await server.api(`/v1/boxes/${box.id}/screens/0/frame`);
    expect(frame.status).toBe(200);
  });
});
