import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateBoxSchema } from "~/models/spec.server";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// The edges of /v1: credentials, bad input, idempotency. Bad input never becomes a 500 and
// never creates a box.

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

async function boxCount() {
  return (await json(await server.api("/v1/boxes"))).boxes.length as number;
}

describe("credentials", () => {
  it("serves health with no token", async () => {
    const res = await fetch(`${server.base}/v1/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, service: "holm-server" });
  });

  it("refuses a missing or wrong token with 401 and the error body", async () => {
    const variants: Record<string, string>[] = [{}, { authorization: "Bearer nope-nope-nope-nope" }, { authorization: "Basic abc" }];
    for (const headers of variants) {
      for (const [method, path] of [
        ["GET", "/v1/boxes"],
        ["POST", "/v1/boxes"],
        ["GET", "/v1/boxes/box_0123456789abcdef0123456789abcdef"],
        ["GET", "/v1/catalog"],
        ["GET", "/v1/events"],
        ["POST", "/v1/jobs/reap"],
      ]) {
        const res = await fetch(`${server.base}${path}`, { method, headers });
        expect(res.status, `${method} ${path}`).toBe(401);
        expect(await json(res)).toMatchObject({ code: "unauthorized", retryable: false });
      }
    }
  });
});

describe("bad input", () => {
  it("refuses unknown keys, naming the key", async () => {
    const res = await server.api("/v1/boxes", { method: "POST", json: { spec: { desktop: { colour: "blue" } } } });
    expect(res.status).toBe(400);
    const body = await json(res);
    expect(body.code).toBe("bad_request");
    expect(body.message).toContain('"colour"');
  });

  it("fuzz: random bodies answer 4xx with the error shape, never 5xx, and create nothing", async () => {
    const before = await boxCount();
    let seed = 42;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const values: unknown[] = [null, true, 0, -1, 1e309, 1.5, "", "x".repeat(5000), [], {}, [1, 2], { a: 1 }, "\u0000", 99999999];
    const keys = ["spec", "placement", "desktop", "width", "height", "screens", "features", "packages", "policy", "network", "memory", "cpus", "expires_after_secs", "__proto__", "constructor"];
    const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)]!;
    const bodies: string[] = ["{", "[", "nul", '{"spec":', "\u0000", '"str"', "123", "true"];
    for (let i = 0; i < 150; i++) {
      const inner: Record<string, unknown> = {};
      for (let k = 0; k < 1 + Math.floor(rand() * 3); k++) {
        // defineProperty, so "__proto__" becomes a real key instead of a prototype.
        Object.defineProperty(inner, pick(keys), { value: pick(values), enumerable: true, configurable: true, writable: true });
      }
      const shape = pick([
        { spec: { desktop: inner } },
        { placement: inner },
        { spec: inner },
        inner,
        { spec: { desktop: { width: pick(values), screens: pick(values) } } },
        { spec: { desktop: { features: [pick(values)], packages: [pick(values)] } } },
      ]);
      const text = JSON.stringify(shape);
      // Only bodies the schema refuses: a valid one would launch a real box.
      if (!CreateBoxSchema.safeParse(shape).success) bodies.push(text);
    }
    for (const body of bodies) {
      const res = await server.api("/v1/boxes", { method: "POST", body, headers: { "content-type": "application/json" } });
      expect(res.status, body).toBeGreaterThanOrEqual(400);
      expect(res.status, body).toBeLessThan(500);
      const err = await json(res);
      expect(Object.keys(err).sort()).toEqual(["code", "message", "retryable"]);
    }
    expect(await boxCount()).toBe(before);
  });

  it("refuses malformed query parameters", async () => {
    for (const q of ["limit=0", "limit=abc", "after=-1", "limit=5000", "unknown=1"]) {
      const res = await server.api(`/v1/events?${q}`);
      expect(res.status, q).toBe(400);
    }
  });

  it("answers 404 for a malformed box id without touching the runtime", async () => {
    for (const id of ["nope", "box_", "box_zz", "../etc", "box_0123456789abcdef0123456789abcdef0"]) {
      const res = await server.api(`/v1/boxes/${encodeURIComponent(id)}`);
      expect(res.status, id).toBe(404);
    }
  });
});

describe("idempotency-key on POST /v1/boxes", () => {
  it("makes one box for concurrent requests with one key, replays it, and refuses another body", async () => {
    const before = await boxCount();
    const body = { spec: { desktop: { width: 1024, height: 768 } } };
    const results = await Promise.all(
      Array.from({ length: 4 }, () =>
        server.api("/v1/boxes", { method: "POST", json: body, headers: { "idempotency-key": "same-1" } }),
      ),
    );
    const ids = new Set<string>();
    for (const r of results) {
      expect(r.status).toBe(200);
      ids.add((await json(r)).id);
    }
    expect(ids.size).toBe(1);
    expect(await boxCount()).toBe(before + 1);

    const again = await server.api("/v1/boxes", { method: "POST", json: body, headers: { "idempotency-key": "same-1" } });
    expect((await json(again)).id).toBe([...ids][0]);
    expect(await boxCount()).toBe(before + 1);

    const other = await server.api("/v1/boxes", {
      method: "POST",
      json: { spec: { desktop: { width: 800, height: 600 } } },
      headers: { "idempotency-key": "same-1" },
    });
    expect(other.status).toBe(400);
    expect((await json(other)).code).toBe("bad_request");
    expect(await boxCount()).toBe(before + 1);
    const box = [...ids][0]!;
    await server.api(`/v1/boxes/${box}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
  });
});
