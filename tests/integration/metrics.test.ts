import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerSecret } from "../support/log-secrets";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// Logs, metrics and readiness on a real server with a real box (issue 19): GET /metrics behind
// its token, scraped while an agent drives the box with click batches (the batch histogram of
// `click` goes up by exactly the batches sent); the request log's line for a batch; readiness
// answering 200 here and 503, naming the engine, on a server whose Docker socket is missing.

const METRICS_TOKEN = randomBytes(24).toString("hex");
/** Typed into the box: the run's log check looks for it in every server log (typed text is never logged). */
const TYPED = `typed-marker-${randomBytes(6).toString("hex")}`;
registerSecret(TYPED, "typed text (metrics test)");
let server: TestServer;
let broken: TestServer | undefined;
let box: { id: string; state: string };

beforeAll(async () => {
  server = await startServer({ HOLM_METRICS_TOKEN: METRICS_TOKEN });
  const res = await server.api("/v1/boxes", { method: "POST", json: {} });
  box = await json(res);
  expect(box.state, JSON.stringify(box)).toBe("ready");
});

afterAll(async () => {
  await server?.stop();
  await broken?.stop();
  await removeTestBoxes();
});

const scrape = (token?: string) => fetch(`${server.base}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

/** Every sample of a scrape: `name{labels}` → value. */
async function samples(): Promise<Map<string, number>> {
  const res = await scrape(METRICS_TOKEN);
  expect(res.status).toBe(200);
  const out = new Map<string, number>();
  for (const line of (await res.text()).split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

describe("GET /metrics", () => {
  it("answers 401 with the error body without a token or with a wrong one", async () => {
    for (const token of [undefined, "not-the-token-at-all", `${METRICS_TOKEN}x`]) {
      const res = await scrape(token);
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
      expect(await res.json()).toEqual({ code: "unauthorized", message: expect.any(String), retryable: false });
    }
  });

  it("answers Prometheus text to HOLM_METRICS_TOKEN and to the server token", async () => {
    for (const token of [METRICS_TOKEN, server.token]) {
      const res = await scrape(token);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
      const text = await res.text();
      expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
      expect(text).toMatch(/^holm_boxes\{state="ready"\} [1-9]/m);
      expect(text).toMatch(/^holm_box_launches_total [1-9]/m);
      expect(text).toMatch(/^holm_box_start_phase_seconds_count\{phase="x"\} [1-9]/m);
      expect(text).toMatch(/^holm_box_start_seconds_count\{outcome="ready"\} [1-9]/m);
    }
  });

  it("counts the click batches an agent sends, by step type", async () => {
    const before = await samples();
    const count = (m: Map<string, number>, key: string) => m.get(key) ?? 0;
    const BATCHES = 7;
    for (let i = 0; i < BATCHES; i++) {
      const res = await server.api(`/v1/boxes/${box.id}/screens/0/actions`, {
        method: "POST",
        json: { actions: [{ type: "click", at: { x: 300 + i, y: 300 } }] },
      });
      expect(res.status, await res.text()).toBe(200);
    }
    // One batch of two kinds counts as `mixed`, its steps under their own types.
    const mixed = await server.api(`/v1/boxes/${box.id}/screens/0/actions`, {
      method: "POST",
      json: { actions: [{ type: "click", at: { x: 310, y: 310 } }, { type: "type", text: TYPED }] },
    });
    expect(mixed.status, await mixed.text()).toBe(200);
    const after = await samples();
    const click = 'holm_batch_duration_seconds_count{step="click"}';
    expect(count(after, click) - count(before, click)).toBe(BATCHES);
    const mixedKey = 'holm_batch_duration_seconds_count{step="mixed"}';
    expect(count(after, mixedKey) - count(before, mixedKey)).toBe(1);
    const steps = 'holm_batch_steps_total{step="click"}';
    expect(count(after, steps) - count(before, steps)).toBe(BATCHES + 1);
    // Every batch fell in some bucket: +Inf holds them all.
    const inf = 'holm_batch_duration_seconds_bucket{le="+Inf",step="click"}';
    expect(count(after, inf) - count(before, inf)).toBe(BATCHES);
  });
});

describe("the request log", () => {
  it("has one line per batch with the route pattern, status, duration, actor and box, and no token", async () => {
    const read = () =>
      server
        .logs()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    const batchesIn = (lines: Record<string, unknown>[]) =>
      lines.filter((l) => l.msg === "request" && l.route === "/v1/boxes/:id/screens/:screen/actions" && l.status === 200);
    // A request's line is written once its answer has gone, so the last one may still be on its way.
    let lines = read();
    for (let i = 0; i < 50 && batchesIn(lines).length < 8; i++) {
      await new Promise((r) => setTimeout(r, 100));
      lines = read();
    }
    const batches = batchesIn(lines);
    expect(batches.length).toBeGreaterThanOrEqual(8);
    expect(batches[0]).toMatchObject({ level: "info", method: "POST", actor: "server", box: box.id, ms: expect.any(Number) });
    // The scrapes that were refused are lines too, and the box's start with its phases.
    expect(lines.some((l) => l.route === "/metrics" && l.status === 401)).toBe(true);
    expect(lines.find((l) => l.msg === "box ready" && l.box === box.id)).toMatchObject({ phases_ms: { x: expect.any(Number) } });
    expect(server.logs()).not.toContain(server.token);
    expect(server.logs()).not.toContain(METRICS_TOKEN);
    expect(server.logs()).not.toContain(TYPED);
  });
});

describe("readiness", () => {
  it("leaves /v1/health as the seed has it", async () => {
    const res = await fetch(`${server.base}/v1/health`);
    expect(await res.json()).toEqual({ ok: true, service: "holm-server" });
  });

  it("answers 200 with each check when the store, the engine and the image are there", async () => {
    const res = await fetch(`${server.base}/v1/health?ready=1`);
    const body = await res.json();
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({ ok: true, ready: true, checks: { store: { ok: true }, engine: { ok: true }, image: { ok: true } } });
  });

  it("answers 503 naming what failed on a server whose engine is missing", async () => {
    broken = await startServer({ HOLM_DOCKER_SOCKET: "/nonexistent/docker.sock" });
    const res = await fetch(`${broken.base}/v1/health?ready=1`);
    const body = await res.json();
    expect(res.status, JSON.stringify(body)).toBe(503);
    expect(body).toMatchObject({ code: "unavailable", retryable: true, ready: false, checks: { store: { ok: true }, engine: { ok: false } } });
    expect(body.message).toMatch(/engine/);
    // Liveness is unchanged: the process answers.
    expect((await fetch(`${broken.base}/v1/health`)).status).toBe(200);
  });
});
