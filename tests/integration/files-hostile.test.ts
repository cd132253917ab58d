import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// The file routes with arguments an agent (or whoever holds its key) may send on purpose: files
// that lie about their size, and patterns that backtrack for ever. Each answers the seed's error
// at once; the box, whose agent answers every other call too, lives on. A box per test: on the
// code before this, each attack left its box dead (killed for its memory) or deaf for hours.

let server: TestServer;
const boxes: string[] = [];

beforeAll(async () => {
  server = await startServer();
});

afterAll(async () => {
  await Promise.all(boxes.map((id) => server.api(`/v1/boxes/${id}`, { method: "DELETE" }).catch(() => undefined)));
  await server?.stop();
  await removeTestBoxes();
});

/** A box of the test's own, and the calls the tests make to it. */
async function launch() {
  const box = await json(await server.api("/v1/boxes", { method: "POST", json: { spec: { desktop: { features: [] } } } }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  boxes.push(box.id);

  /** A call that must answer within `ms`: a hang fails the test with what happened, not its timeout. */
  async function call(path: string, init: RequestInit & { json?: unknown } = {}, ms = 45_000) {
    const t0 = Date.now();
    try {
      const res = await server.api(`/v1/boxes/${box.id}${path}`, { ...init, signal: AbortSignal.timeout(ms) });
      const text = await res.text();
      return { status: res.status, body: JSON.parse(text), ms: Date.now() - t0 };
    } catch (err) {
      return { status: 0, body: { error: String(err) }, ms: Date.now() - t0 };
    }
  }

  /** The box still runs and its agent answers at once. */
  async function expectAlive() {
    const cursor = await call("/screens/0/cursor", {}, 10_000);
    expect(cursor.status, JSON.stringify(cursor)).toBe(200);
    const state = await json(await server.api(`/v1/boxes/${box.id}`));
    expect(state.state, JSON.stringify(state)).toBe("ready");
  }

  const put = (path: string, text: string) =>
    call("/files", { method: "PUT", json: { path, contents_base64: Buffer.from(text).toString("base64") } });

  return { call, expectAlive, put };
}

describe("files that say size 0 and go on", () => {
  it("the agent's own /proc/self/pagemap is refused past the file limit (400), a grep of /proc/self ends; the box lives on", async () => {
    const { call, expectAlive } = await launch();
    // procfs says 0 bytes for it, then gives 8 bytes per page of the whole address space (TBs).
    const read = await call("/files?path=/proc/self/pagemap");
    expect(read.status, JSON.stringify(read)).toBe(400);
    expect(read.body).toMatchObject({ code: "bad_request", retryable: false });
    expect(read.body.message).toMatch(/limit/);
    await expectAlive();

    const grep = await call("/files/grep", { method: "POST", json: { pattern: "^Name:", path: "/proc/self" } });
    expect(grep.status, JSON.stringify(grep).slice(0, 500)).toBe(200);
    expect(grep.body.matches.some((m: any) => m.path === "/proc/self/status"), JSON.stringify(grep.body).slice(0, 500)).toBe(true);
    await expectAlive();

    // A size-0 file that ends is read whole, as before.
    const status = await call("/files?path=/proc/self/status");
    expect(status.status, JSON.stringify(status)).toBe(200);
    expect(Buffer.from(status.body.contents_base64, "base64").toString()).toMatch(/^Name:\s+node/m);
  });
});

// Each blocks its box's agent for the walk's budget (~22 s): the two run side by side, in two boxes.
describe.concurrent("patterns that backtrack for ever", () => {
  it("grep `(a+)+$` over a line of a's: 400 within the walk's budget, and the agent answers other calls after", async () => {
    const { call, expectAlive, put } = await launch();
    expect((await put("/tmp/redos/line.txt", `${"a".repeat(40)}!\n`)).status).toBe(200);
    const grep = await call("/files/grep", { method: "POST", json: { pattern: "(a+)+$", path: "/tmp/redos" } });
    expect(grep.status, JSON.stringify(grep)).toBe(400);
    expect(grep.body).toMatchObject({ code: "bad_request", retryable: false });
    expect(grep.body.message).toMatch(/pattern/);
    expect(grep.ms).toBeLessThan(30_000);
    await expectAlive();
    // The same pattern on a line it settles quickly still finds it.
    expect((await put("/tmp/redos2/line.txt", "aaa\n")).status).toBe(200);
    const ok = await call("/files/grep", { method: "POST", json: { pattern: "(a+)+$", path: "/tmp/redos2" } });
    expect(ok.status, JSON.stringify(ok)).toBe(200);
    expect(ok.body.matches).toHaveLength(1);
  });

  it("glob `**/` × 16 against a deep path: 400 within the walk's budget, and the agent answers other calls after", async () => {
    const { call, expectAlive, put } = await launch();
    expect((await put(`/tmp/deep/${"a/".repeat(30)}y`, "y")).status).toBe(200);
    const pattern = encodeURIComponent(`${"**/".repeat(16)}x`);
    const glob = await call(`/files/glob?pattern=${pattern}&path=/tmp/deep`);
    expect(glob.status, JSON.stringify(glob)).toBe(400);
    expect(glob.body).toMatchObject({ code: "bad_request", retryable: false });
    expect(glob.ms).toBeLessThan(30_000);
    await expectAlive();
    const ok = await call(`/files/glob?pattern=${encodeURIComponent("**/y")}&path=/tmp/deep`);
    expect(ok.status, JSON.stringify(ok)).toBe(200);
    expect(ok.body.paths).toEqual([`/tmp/deep/${"a/".repeat(30)}y`]);
  });
});
