import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Person, consoleClient } from "../support/console";
import { decodePng } from "../support/png";
import { type TestServer, removeTestBoxes, startServer } from "../support/server";

// /mcp as an MCP client sees it, beyond the basics of mcp.test.ts (a review with the SDK's own
// client): a call in flight when its key is revoked gets an answer; images of batch steps are
// image blocks; tool inputs take JSON types and list their bounds; every tool refuses unknown
// arguments; annotations say which tools may destroy; malformed tools/call params are -32602;
// a person declining a removal is told as such.

let server: TestServer;
let c: ReturnType<typeof consoleClient>;
let ada: Person;
let key: { secret: string; id: string };
let client: Client;
let transport: StreamableHTTPClientTransport;
let boxId = "";

type ToolResult = { isError?: boolean; content: Array<{ type: string; text?: string; data?: string; mimeType?: string }> };

async function connect(secret: string, opts: { decline?: "decline" | "cancel" } = {}) {
  const t = new StreamableHTTPClientTransport(new URL(`${server.base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${secret}` } } });
  const cl = new Client({ name: "holm-test", version: "1.0.0" }, opts.decline ? { capabilities: { elicitation: {} } } : {});
  if (opts.decline) cl.setRequestHandler(ElicitRequestSchema, async () => ({ action: opts.decline! }));
  await cl.connect(t);
  return { client: cl, transport: t };
}

const callOn = async (cl: Client, name: string, args: Record<string, unknown>, timeout = 60_000) =>
  (await cl.callTool({ name, arguments: args }, undefined, { timeout })) as ToolResult;
const call = (name: string, args: Record<string, unknown>) => callOn(client, name, args);
const body = (r: ToolResult) => JSON.parse(r.content[0]!.text!);

/** A raw JSON-RPC POST in the SDK client's session; its answer, whether JSON or one SSE event. */
async function rawCall(message: unknown): Promise<any> {
  const res = await fetch(`${server.base}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
      authorization: `Bearer ${key.secret}`,
      "mcp-session-id": transport.sessionId!,
    },
    body: JSON.stringify(message),
  });
  const raw = await res.text();
  if (!(res.headers.get("content-type") ?? "").includes("event-stream")) return JSON.parse(raw);
  const data = raw.split("\n").filter((l) => l.startsWith("data: ") && l.length > 6);
  return JSON.parse(data.at(-1)!.slice(6));
}

beforeAll(async () => {
  server = await startServer();
  c = consoleClient(server);
  ada = await c.signUp("ada@example.com", "A");
  key = await c.createKey(ada, "agent");
  ({ client, transport } = await connect(key.secret));
  const launched = await call("launch_box", {});
  expect(launched.isError, launched.content[0]?.text).toBeFalsy();
  boxId = body(launched).id;
}, 120_000);

afterAll(async () => {
  await client?.close().catch(() => {});
  await server?.stop();
  await removeTestBoxes();
});

describe("MCP tools as a client sees them", () => {
  it("a tool call in flight when its key is revoked is answered at once: `unauthorized: the API key was revoked`", async () => {
    const doomed = await c.createKey(ada, "doomed");
    const { client: cl } = await connect(doomed.secret);
    const t0 = Date.now();
    // A short client timeout: before the fix the call got no answer and the SDK waited 60 s.
    const pending = callOn(cl, "exec", { box: boxId, argv: ["sh", "-c", "sleep 3; echo done"] }, 15_000).then(
      (r) => r,
      (e: Error) => e,
    );
    await new Promise((r) => setTimeout(r, 1000));
    const csrf = c.csrfIn(await c.page(ada, "/keys"));
    expect((await c.form(ada, "/keys?index", { intent: "revoke", id: doomed.id, csrf })).status).toBe(200);
    const r = await pending;
    expect(r).not.toBeInstanceOf(Error);
    expect((r as ToolResult).isError).toBe(true);
    expect((r as ToolResult).content[0]!.text).toBe("unauthorized: the API key was revoked");
    expect(Date.now() - t0).toBeLessThan(5000);
    await cl.close().catch(() => {});
  }, 30_000);

  it("images of batch steps (capture, page_shot) are image blocks, named in the text, not base64 in the JSON", async () => {
    const r = await call("batch", { box: boxId, actions: [{ type: "capture" }, { type: "wait", ms: 10 }, { type: "page_shot" }] });
    expect(r.isError, r.content[0]?.text?.slice(0, 300)).toBeFalsy();
    const json = r.content[0]!.text!;
    expect(json).not.toMatch(/_base64/);
    expect(json.length).toBeLessThan(5000);
    expect(body(r).results[0]).toMatchObject({ ok: true, image: expect.stringContaining("image") });
    const images = r.content.filter((b) => b.type === "image");
    expect(images.map((b) => b.mimeType)).toEqual(["image/png", "image/png"]);
    const png = decodePng(Buffer.from(images[0]!.data!, "base64"));
    expect([png.width, png.height]).toEqual([1280, 800]);
    // Each image follows a text naming its step.
    const labels = r.content.filter((b) => b.type === "text").slice(1).map((b) => b.text);
    expect(labels).toEqual([expect.stringMatching(/step 0 \(capture\)/), expect.stringMatching(/step 2 \(page_shot\)/)]);
  }, 60_000);

  it("a `png_base64` key in data others wrote (a box label, a page's value) stays data: no image block, nothing lost, the tool answers", async () => {
    const labels = { png_base64: "x", jpeg_base64: "aGVsbG8gd29ybGQ=", image: "mine" };
    const patched = await server.api(`/v1/boxes/${boxId}`, { method: "PATCH", json: { labels } });
    expect(patched.status, await patched.clone().text()).toBe(200);
    try {
      for (const [tool, args] of [["list_boxes", {}], ["get_box", { box: boxId }]] as const) {
        const r = await call(tool, args);
        expect(r.isError, `${tool}: ${r.content[0]?.text?.slice(0, 300)}`).toBeFalsy();
        expect(r.content.filter((b) => b.type === "image"), tool).toEqual([]);
        const shown = body(r);
        const box = tool === "list_boxes" ? shown.boxes.find((b: { id: string }) => b.id === boxId) : shown;
        expect(box.labels, tool).toEqual(labels);
      }
      // A page's value read by a step: the page chose the keys.
      const value = { png_base64: "not base64 at all!", jpeg_base64: "aGVsbG8gd29ybGQ=", image: "mine" };
      const r = await call("batch", { box: boxId, actions: [{ type: "evaluate", what: { expression: `(${JSON.stringify(value)})` } }] });
      expect(r.isError, r.content[0]?.text?.slice(0, 300)).toBeFalsy();
      expect(r.content.filter((b) => b.type === "image")).toEqual([]);
      expect(JSON.stringify(body(r).results[0])).toContain(JSON.stringify(value).slice(1, -1));
    } finally {
      await server.api(`/v1/boxes/${boxId}`, { method: "PATCH", json: { labels: {} } });
    }
  }, 60_000);

  it("tool inputs take JSON types (booleans, numbers) and list the real bounds", async () => {
    const { tools } = await client.listTools();
    const props = (n: string) => tools.find((t) => t.name === n)!.inputSchema.properties as Record<string, any>;
    const snap = props("page_snapshot");
    expect(JSON.stringify(snap.delta)).toContain('"boolean"');
    expect(JSON.stringify(snap.delta)).toContain('"integer"');
    expect(snap.limit).toMatchObject({ type: "integer", minimum: 1, maximum: 10_000 });
    expect(snap.quiet_ms).toMatchObject({ type: "integer", minimum: 0, maximum: 30_000 });
    expect(props("page_element").settle_ms).toMatchObject({ type: "integer", minimum: 0, maximum: 30_000 });
    expect(JSON.stringify(props("frame").pointer)).toContain('"boolean"');

    const first = await call("page_snapshot", { box: boxId, limit: 50 });
    expect(first.isError, first.content[0]?.text).toBeFalsy();
    const delta = await call("page_snapshot", { box: boxId, delta: true, quiet_ms: 0 });
    expect(delta.isError, delta.content[0]?.text).toBeFalsy();
    const byRev = await call("page_snapshot", { box: boxId, delta: body(first).rev });
    expect(byRev.isError, byRev.content[0]?.text).toBeFalsy();
    const tooMany = await call("page_snapshot", { box: boxId, limit: 0 });
    expect(tooMany.content[0]!.text).toMatch(/^bad_request: limit: /);
    const shot = await call("frame", { box: boxId, pointer: true });
    expect(shot.isError, shot.content[0]?.text).toBeFalsy();
    expect(shot.content.some((b) => b.type === "image")).toBe(true);
    // The strings of the query string still do.
    expect((await call("frame", { box: boxId, pointer: "false" })).isError).toBeFalsy();
  }, 60_000);

  it("desktop_node refuses an unknown argument as every tool does, and lists additionalProperties: false", async () => {
    const r = await call("desktop_node", { box: boxId, what: { op: "tree" }, junk: 1 });
    expect(r.isError).toBe(true);
    expect(r.content[0]!.text).toMatch(/^bad_request: .*junk/);
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === "desktop_node")!.inputSchema).toMatchObject({ additionalProperties: false });
  });

  it("annotations: tools that may delete or overwrite are destructive; launching is not", async () => {
    const { tools } = await client.listTools();
    const hint = (n: string) => tools.find((t) => t.name === n)!.annotations?.destructiveHint;
    for (const n of ["exec", "write_file", "batch", "stop_box", "remove_box", "page_element", "desktop_node"]) expect(hint(n), n).toBe(true);
    for (const n of ["launch_box", "fork_box", "pause_box", "resume_box", "viewer_ticket"]) expect(hint(n), n).toBe(false);
  });

  it("malformed tools/call params are JSON-RPC -32602 with a short message", async () => {
    const arr = await rawCall({ jsonrpc: "2.0", id: 31, method: "tools/call", params: { name: "get_box", arguments: ["x"] } });
    expect(arr).toMatchObject({ id: 31, error: { code: -32602 } });
    expect(arr.error.message).toMatch(/arguments/);
    expect(arr.error.message.length).toBeLessThan(200);
    const empty = await rawCall({ jsonrpc: "2.0", id: 32, method: "tools/call", params: {} });
    expect(empty).toMatchObject({ id: 32, error: { code: -32602 } });
    expect(empty.error.message).toMatch(/name/);
    expect(empty.error.message.length).toBeLessThan(200);
    // A good call in the same session still works.
    expect((await call("get_box", { box: boxId })).isError).toBeFalsy();
  });

  it("a person declining remove_box's question is told as such, and the box stays", async () => {
    for (const answer of ["decline", "cancel"] as const) {
      const { client: cl } = await connect(key.secret, { decline: answer });
      const r = await callOn(cl, "remove_box", { box: boxId });
      expect(r.isError).toBe(true);
      expect(r.content[0]!.text).toMatch(/the person .*(declined|cancelled)/);
      expect(r.content[0]!.text).not.toMatch(/needs confirm/);
      await cl.close().catch(() => {});
    }
    expect(body(await call("get_box", { box: boxId })).state).toBe("ready");
  });
});
