import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Person, consoleClient } from "../support/console";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// Bodies our schemas must refuse before anything is made (seed 000: 400 `bad_request` naming the
// field): a spec.apps argv with a NUL byte or a title with a line end of any kind (the image keeps
// argv NUL-separated, the dock reads the title as one line), and a `__proto__` key anywhere, which
// zod's z.record would drop unseen (the app gone, the label lost, and a 200). On /v1, on /mcp,
// in the console's launch form, and in a query (where `constructor` is an unknown key like any).

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

/** An initialized MCP session's headers (the server token as the bearer). */
async function mcpSession(): Promise<Record<string, string>> {
  const accept = { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" };
  const init = await server.api("/mcp", {
    method: "POST",
    headers: { "content-type": "application/json", ...accept },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
  });
  const sid = init.headers.get("mcp-session-id")!;
  expect(init.status, await init.text()).toBe(200);
  expect(sid).toBeTruthy();
  const session = { ...accept, "mcp-session-id": sid };
  expect((await post("/mcp", '{"jsonrpc":"2.0","method":"notifications/initialized"}', session)).status).toBe(202);
  return session;
}

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

describe("a __proto__ key in a body", () => {
  it("is 400 naming where, on box create (apps, labels) and the image build; nothing is made", async () => {
    const before = await made();
    const cases: [string, string, string][] = [
      ["/v1/boxes", '{"spec":{"apps":{"__proto__":{"argv":["x"]}}}}', "spec.apps.__proto__"],
      ["/v1/boxes", '{"metadata":{"labels":{"team":"a","__proto__":"b"}}}', "metadata.labels.__proto__"],
      ["/v1/boxes", '{"__proto__":{},"spec":{}}', "__proto__"],
      ["/v1/runtimes/docker/image", '{"spec":{"apps":{"__proto__":{"argv":["x"]}}}}', "spec.apps.__proto__"],
    ];
    for (const [path, text, field] of cases) refusedNaming(await post(path, text), field, `${path} ${text}`);
    expect(await made()).toEqual(before);
  });

  it("in an MCP tool call's arguments is refused as an invalid request naming where; no box is launched", async () => {
    const before = await made();
    const session = await mcpSession();
    const call = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"launch_box","arguments":{"metadata":{"labels":{"__proto__":"x"}}}}}';
    const r = await post("/mcp", call, session);
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error.message).toContain("params.arguments.metadata.labels.__proto__");
    expect(await made()).toEqual(before);
  });
});

describe("a __proto__ key from the console's launch form or in a /v1 query", () => {
  it("a launch form label `__proto__=x` is refused naming it, and no box is launched", async () => {
    const c = consoleClient(server);
    const ada: Person = await c.signUp("ada@example.com", "Refusals");
    const csrf = c.csrfIn(await c.page(ada, "/"));
    const before = await made();
    const res = await c.form(ada, "/?index", { intent: "launch", csrf, labels: "team=web, __proto__=x" });
    const html = await res.text();
    expect(res.status, html.slice(0, 300)).toBe(400);
    // The form's own check names it in words before the API's schema would.
    expect(html).toContain("“__proto__” cannot be a label key.");
    expect(await made()).toEqual(before);
  });

  it("`?constructor=1` is an unknown key, not a key given twice; `?__proto__=1` is refused, not ignored", async () => {
    const ctor = await server.api("/v1/boxes?constructor=1");
    expect(ctor.status).toBe(400);
    expect((await ctor.json()).message).toBe('unknown key "constructor" in the query');
    const proto = await server.api("/v1/boxes?__proto__=1");
    expect(proto.status).toBe(400);
    expect((await proto.json()).message).toBe('__proto__: "__proto__" cannot be a key in the query');
  });
});

describe("a misspelled key is named as unknown, not reported as the key it stands for missing (000)", () => {
  it("on /v1: the unknown key first, with the missing one it likely means", async () => {
    const hook = await post("/v1/webhooks", '{"uri": "https://hooks.example.com/x", "events": ["*"]}');
    expect(hook.status).toBe(400);
    expect(hook.body.message).toBe('unknown key "uri" in the body (did you mean "url"?)');
    const box = await post("/v1/boxes", '{"specs": {}}');
    expect(box.body.message).toBe('unknown key "specs" in the body');
  });

  it("in an MCP tool's arguments: get_box {id} says id is unknown and box is meant", async () => {
    const session = await mcpSession();
    const r = await post("/mcp", '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_box","arguments":{"id":"box_0123456789abcdef0123456789abcdef"}}}', session);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    // Answered on the session's event stream: the tool's result is its `data:` line.
    const data = String(r.body).split("\n").find((l) => l.startsWith("data: {"))!;
    const result = JSON.parse(data.slice("data: ".length)).result;
    expect(result.isError).toBe(true);
    expect(result.content[0].text).toBe('bad_request: unknown key "id" in the arguments (did you mean "box"?)');
  });
});
