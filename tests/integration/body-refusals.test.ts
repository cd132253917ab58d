import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// Bodies our schemas must refuse before anything is made (seed 000: 400 `bad_request` naming the
// field): a spec.apps argv with a NUL byte or a title with a line end of any kind (the image keeps
// argv NUL-separated, the dock reads the title as one line), and a `__proto__` key anywhere, which
// zod's z.record would drop unseen (the app gone, the label lost, and a 200). On /v1 and on /mcp.

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

/** A POST with `text` as its JSON body as it is (a `__proto__` key written in a JS object would be its prototype). */
async function post(path: string, text: string, headers: Record<string, string> = {}) {
  const res = await server.api(path, { method: "POST", body: text, headers: { "content-type": "application/json", ...headers }, signal: AbortSignal.timeout(60_000) });
  const body = await res.text();
  try {
    return { status: res.status, body: JSON.parse(body) };
  } catch {
    return { status: res.status, body };
  }
}

const made = async () => ({
  boxes: (await json(await server.api("/v1/boxes"))).boxes.length,
  images: (await json(await server.api("/v1/runtimes/docker/images"))).images.length,
});

function refusedNaming(r: { status: number; body: any }, field: string, what: string) {
  expect(r.status, `${what}: ${JSON.stringify(r.body)}`).toBe(400);
  expect(r.body, what).toMatchObject({ code: "bad_request", retryable: false });
  expect(r.body.message, what).toContain(field);
}

describe("spec.apps text the image could not hold", () => {
  it("a NUL byte in argv, or U+0085/U+2028/U+2029 in a title, is 400 naming the field on POST /v1/boxes and /v1/runtimes/docker/image; nothing is made", async () => {
    const before = await made();
    const cases: [unknown, string][] = [
      [{ ok: { argv: ["a\u0000b"] } }, "spec.apps.ok.argv.0"],
      [{ ok: { argv: ["x"], title: "a\u0085b" } }, "spec.apps.ok.title"],
      [{ ok: { argv: ["x"], title: "a\u2028b" } }, "spec.apps.ok.title"],
      [{ ok: { argv: ["x"], window_class: "a\u2029b" } }, "spec.apps.ok.window_class"],
    ];
    for (const [apps, field] of cases) {
      for (const path of ["/v1/boxes", "/v1/runtimes/docker/image"]) {
        refusedNaming(await post(path, JSON.stringify({ spec: { apps } })), field, `${path} ${JSON.stringify(apps)}`);
      }
    }
    expect(await made()).toEqual(before);
  });
});
