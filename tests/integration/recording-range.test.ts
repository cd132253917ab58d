import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { openStore } from "../support/store";

// A kept recording is up to 64 MB, and a player reads it a range at a time (a viewer may too).
// Each range is read from the store as that range, and a whole read a chunk at a time: neither
// holds the event loop for the whole recording. A real server with one real box; the 55 MB
// recording is written into its store as the server keeps one (random bytes, as an MP4 is
// incompressible), on SQLite or PostgreSQL (HOLM_TEST_STORE=postgres).

const MIB = 1024 * 1024;
const SIZE = 55 * MIB;
let server: TestServer;
let boxId: string;
const recId = `rec_${randomBytes(8).toString("hex")}`;

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
  const box = await json(await server.api("/v1/boxes", { method: "POST", json: { spec: { desktop: { features: [] } } } }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  boxId = box.id;
  const db = openStore(server);
  const now = Date.now();
  db.prepare("insert into trace_recording (id, box_id, screen, fps, started_at_ms, stopped_at_ms, path, bytes) values (?, ?, 0, 10, ?, ?, '/tmp/holm-rec.mp4', ?)").run(recId, boxId, now - 60_000, now, SIZE);
  // Its bytes as the server keeps them (migration 0021): parts of 1 MiB, random.
  const part =
    db.kind === "postgres" ? "(select decode(string_agg(md5(i::text || ?), '' order by i), 'hex') from generate_series(1, 65536) i)" : "randomblob(1048576 + 0 * ?)";
  for (let n = 0; n < SIZE / MIB; n++) db.prepare(`insert into trace_recording_part (recording_id, n, data) values (?, ?, ${part})`).run(recId, n, `${recId}-${n}`);
  db.close();
  // Writing through psql (PostgreSQL) outlasts the server's keep-alive: the client's idle socket
  // is closed by now, and the first request on it fails. This one takes that.
  await fetch(`${server.base}/v1/health`).catch(() => undefined);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

const url = () => `/v1/boxes/${boxId}/trace/recordings/${recId}`;

/** How long /v1/health takes to answer, in ms. */
async function healthMs(): Promise<number> {
  const t0 = performance.now();
  expect((await fetch(`${server.base}/v1/health`)).status).toBe(200);
  return performance.now() - t0;
}

describe("reading a big recording", () => {
  it("20 two-byte ranges at once answer in well under the time of reading it whole 20 times, and /v1/health stays quick meanwhile", async () => {
    // Warm: the first request of a route pays for loading its module.
    expect((await server.api(url(), { headers: { range: "bytes=0-1" } })).status).toBe(206);
    const t0 = performance.now();
    const ranges = Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const res = await server.api(url(), { headers: { range: `bytes=${i * 1_000_000}-${i * 1_000_000 + 1}` } });
        expect(res.status).toBe(206);
        expect(res.headers.get("content-range")).toBe(`bytes ${i * 1_000_000}-${i * 1_000_000 + 1}/${SIZE}`);
        expect((await res.arrayBuffer()).byteLength).toBe(2);
      }),
    );
    const health = await healthMs();
    await ranges;
    const took = performance.now() - t0;
    // Reading the whole blob per request: ~270 ms each, 6.3–7.7 s for the 20, health waiting
    // behind them. In parts: ~90 ms for the 20 and health ~80 ms on an idle machine (a range is
    // ~6 ms, a trivial JSON route ~4); the bounds leave room for a busy one.
    expect(took, `20 ranges took ${Math.round(took)} ms`).toBeLessThan(2000);
    expect(health, `health took ${Math.round(health)} ms`).toBeLessThan(1000);
  });

  it("a whole read still gives every byte (the same as its ranges), and /v1/health answers while it streams", async () => {
    const whole = server.api(url()).then(async (res) => {
      expect(res.status).toBe(200);
      expect(res.headers.get("content-length")).toBe(String(SIZE));
      expect(res.headers.get("accept-ranges")).toBe("bytes");
      return Buffer.from(await res.arrayBuffer());
    });
    const during: number[] = [];
    for (let i = 0; i < 5; i++) during.push(await healthMs());
    const bytes = await whole;
    expect(bytes.length).toBe(SIZE);
    // Reading it whole held the loop for 0.7–8.7 s here; in parts, each health answers in ms on an
    // idle machine (one CI run, loaded by three suites beside it, saw 702 ms once among 130–334).
    expect(Math.max(...during), `health during: ${during.map(Math.round)}`).toBeLessThan(1000);
    // Ranges across chunk edges, and what a player asks first (bytes=0-: the rest from 0).
    for (const [start, end] of [[1_048_570, 1_048_590], [SIZE - 10, SIZE - 1], [0, 0], [5_000_000, 7_500_000]] as const) {
      const res = await server.api(url(), { headers: { range: `bytes=${start}-${end}` } });
      expect(res.status).toBe(206);
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes.subarray(start, end + 1)), `${start}-${end}`).toBe(true);
    }
    const open = await server.api(url(), { headers: { range: "bytes=0-" } });
    expect(open.status).toBe(206);
    expect(open.headers.get("content-range")).toBe(`bytes 0-${SIZE - 1}/${SIZE}`);
    const hash = (b: Buffer) => createHash("sha256").update(b).digest("hex");
    expect(hash(Buffer.from(await open.arrayBuffer()))).toBe(hash(bytes));
    // HEAD: the size, no body; past the end: 416 with the size.
    const head = await server.api(url(), { method: "HEAD" });
    expect(head.headers.get("content-length")).toBe(String(SIZE));
    const past = await server.api(url(), { headers: { range: `bytes=${SIZE}-` } });
    expect(past.status).toBe(416);
    expect(past.headers.get("content-range")).toBe(`bytes */${SIZE}`);
  });
});
