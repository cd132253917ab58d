import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Holm, HolmApiError } from "~/client/holm";
import { OPERATIONS, type Operation } from "~/edge/api-operations.server";
import { type TestServer, removeTestBoxes, startServer } from "../support/server";

// The OpenAPI document against the live routes, on one real box: every documented body, sent
// with an unknown key added to its example, is refused by the route with the 400 its schema
// gives (naming the key), and so is every documented query with an unknown parameter. So a route
// that stopped using the schema the registry names (or a schema that stopped refusing unknown
// keys) fails here. The document itself is served without a token. (The registry against the
// router's list: tests/unit/openapi.test.ts.)

let server: TestServer;
let holm: Holm;
let box: string;
const UNKNOWN = "__holm_unknown__";

/** A value for each required query parameter, so only the unknown one is wrong. */
const REQUIRED: Record<string, string> = { path: "/etc", pattern: "*", q: "x" };

/** A webhook (disabled, on a port nothing listens on): the /v1/webhooks/{id} routes look it up first. */
let webhook: string;

function concrete(op: Operation) {
  return op.path
    .replace(/^\/v1\/webhooks\/\{id\}/, `/v1/webhooks/${webhook}`)
    .replace("{delivery}", "whd_000000000000000000000000")
    .replace("{id}", box)
    .replace("{screen}", "0")
    .replace("{window}", "0x00000001")
    .replace("{name}", "openapi-test")
    .replace("{tab}", "none")
    .replace("{hash}", "0".repeat(40));
}

async function refusal(p: Promise<unknown>): Promise<HolmApiError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof HolmApiError) return e;
    throw e;
  }
  throw new Error("the route took it");
}

beforeAll(async () => {
  // The allowance lets the webhook below name 127.0.0.1; it is disabled, so nothing is sent.
  server = await startServer({ HOLM_WEBHOOK_ALLOW_PRIVATE: "1" });
  holm = new Holm({ baseUrl: server.base, token: server.token });
  box = (await holm.boxes.create({}, { wait: true })).id;
  webhook = ((await holm.request("POST", "/v1/webhooks", { body: { url: "http://127.0.0.1:9/openapi-test", events: ["*"], enabled: false } })) as { id: string }).id;
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

describe("GET /v1/openapi.json against the live routes", () => {
  it("is served without a token, and is the document of this server's routes", async () => {
    const anon = new Holm({ baseUrl: server.base });
    const doc = (await anon.openapi()) as { openapi: string; paths: Record<string, Record<string, unknown>> };
    expect(doc.openapi).toBe("3.1.0");
    for (const op of OPERATIONS) expect(doc.paths[op.path]?.[op.method.toLowerCase()], `${op.method} ${op.path}`).toBeDefined();
    // Everything else still needs one.
    expect((await refusal(anon.boxes.list())).code).toBe("unauthorized");
  });

  it("types each answer as the route sends it, and documents the viewer socket, whose plain GET says what it is", async () => {
    const doc = (await new Holm({ baseUrl: server.base }).openapi()) as { paths: Record<string, Record<string, any>> };
    const ok = (p: string) => doc.paths[p]!.get.responses["200"].content;
    expect(Object.keys(ok("/v1/boxes/{id}/trace/recordings/{rid}"))).toEqual(["video/mp4"]);
    expect(ok("/v1/cdp/{token}/json")["application/json"].schema.type).toBe("array");
    expect(doc.paths["/v1/boxes/{id}/screens/{screen}/viewer/socket"]?.get?.security).toEqual([]);
    const socket = `${server.base}/v1/boxes/${box}/screens/0/viewer/socket`;
    // No ticket: the ticket is the credential (a bearer token is not).
    const none = await fetch(socket, { headers: { authorization: `Bearer ${server.token}` } });
    expect(none.status).toBe(401);
    expect(await none.json()).toMatchObject({ code: "unauthorized" });
    const { ticket } = (await holm.request("POST", `/v1/boxes/${box}/screens/0/viewer/ticket`, { body: {} })) as { ticket: string };
    const plain = await fetch(`${socket}?ticket=${encodeURIComponent(ticket)}`);
    expect(plain.status).toBe(400);
    expect((await plain.json()).message).toContain("Upgrade: websocket");
  });

  it("every documented body with an unknown key is refused by its route: 400 naming the key", async () => {
    const withBody = OPERATIONS.filter((op) => op.body && !op.notBuilt);
    const wrong: string[] = [];
    for (const op of withBody) {
      const e = await refusal(holm.request(op.method, concrete(op), { body: { ...(op.example as object), [UNKNOWN]: 1 } }));
      if (e.status !== 400 || e.code !== "bad_request" || !e.message.includes(`unknown key "${UNKNOWN}"`)) wrong.push(`${op.method} ${op.path}: ${e.status} ${e.code} ${e.message}`);
    }
    expect(wrong).toEqual([]);
    expect(withBody.length).toBeGreaterThan(20);
    // Nothing was done: no box was made by the create with a bad body.
    expect((await holm.boxes.list()).map((b) => b.id)).toEqual([box]);
  });

  it("every documented query with an unknown parameter is refused by its route: 400 naming it", async () => {
    const withQuery = OPERATIONS.filter((op) => op.query && !op.notBuilt);
    const wrong: string[] = [];
    for (const op of withQuery) {
      const doc = (await holm.openapi()) as { paths: Record<string, Record<string, { parameters: { name: string; in: string; required: boolean }[] }>> };
      const required = doc.paths[op.path]![op.method.toLowerCase()]!.parameters.filter((p) => p.in === "query" && p.required).map((p) => p.name);
      const query = Object.fromEntries([...required.map((n) => [n, REQUIRED[n] ?? "x"]), [UNKNOWN, "1"]]);
      const e = await refusal(holm.request(op.method, concrete(op), { query }));
      if (e.status !== 400 || !e.message.includes(`unknown key "${UNKNOWN}" in the query`)) wrong.push(`${op.method} ${op.path}: ${e.status} ${e.code} ${e.message}`);
    }
    expect(wrong).toEqual([]);
    expect(withQuery.length).toBeGreaterThan(15);
  });
});
