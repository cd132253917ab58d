import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Person, consoleClient } from "../support/console";
import { decodePng } from "../support/png";
import { type TestServer, removeTestBoxes, startServer } from "../support/server";
import { SITE, serveSite } from "../support/site";
import { until } from "../support/until";
import { apiAs } from "../support/workspaces";

// /mcp with the SDK's own client against a real box (issue 13, "MCP"): the tools list, a box
// launched, a batch that types into a page served in the box (checked through page_snapshot), a
// frame as an image, the trace, removal with confirm. Then the attacks: no key, another key
// reusing a session id, a cross-site Origin, a tool during a takeover; resumability by
// Last-Event-ID; a revoked key's open stream.

let server: TestServer;
let c: ReturnType<typeof consoleClient>;
let ada: Person;
let key: { secret: string; id: string };
let other: { secret: string; id: string };
let client: Client;
let transport: StreamableHTTPClientTransport;
let boxId = "";

const mcpUrl = () => new URL(`${server.base}/mcp`);

async function connect(secret: string) {
  const t = new StreamableHTTPClientTransport(mcpUrl(), { requestInit: { headers: { authorization: `Bearer ${secret}` } } });
  const cl = new Client({ name: "holm-test", version: "1.0.0" });
  await cl.connect(t);
  return { client: cl, transport: t };
}

type ToolResult = { isError?: boolean; content: Array<{ type: string; text?: string; data?: string; mimeType?: string }> };
const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as ToolResult;
const body = (r: ToolResult) => JSON.parse(r.content[0]!.text!);

/** A raw JSON-RPC POST to /mcp (for what the SDK client does not let a test do). */
function rawPost(secret: string | undefined, message: unknown, headers: Record<string, string> = {}) {
  return fetch(`${server.base}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
      ...(secret ? { authorization: `Bearer ${secret}` } : {}),
      ...headers,
    },
    body: JSON.stringify(message),
  });
}

/** Reads SSE events from a response until `until` says stop (or the stream ends). */
async function readEvents(res: Response, until: (e: { id?: string; data: string }) => boolean, ms = 20_000) {
  const reader = res.body!.getReader();
  const events: Array<{ id?: string; data: string }> = [];
  let buf = "";
  const deadline = Date.now() + ms;
  try {
    while (Date.now() < deadline) {
      const { done, value } = await reader.read();
      if (done) return { events, ended: true };
      buf += new TextDecoder().decode(value);
      let cut: number;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const raw = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        if (raw.startsWith(":")) continue;
        const e = { id: /^id: (.*)$/m.exec(raw)?.[1], data: /^data: ?(.*)$/m.exec(raw)?.[1] ?? "" };
        events.push(e);
        if (until(e)) return { events, ended: false };
      }
    }
    return { events, ended: false };
  } finally {
    await reader.cancel().catch(() => {});
  }
}

beforeAll(async () => {
  // A short wait for a paused box under MCP, so its test is quick (the default is 50 s).
  server = await startServer({ HOLM_MCP_PAUSED_WAIT_SECS: "3" });
  c = consoleClient(server);
  ada = await c.signUp("ada@example.com", "A");
  key = await c.createKey(ada, "agent");
  other = await c.createKey(ada, "other");
  ({ client, transport } = await connect(key.secret));
}, 60_000);

afterAll(async () => {
  await client?.close().catch(() => {});
  await server?.stop();
  await removeTestBoxes();
});

describe("MCP over Streamable HTTP", () => {
  it("lists the contract's tools, their inputs from the /v1 schemas", async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const n of ["list_boxes", "launch_box", "get_box", "remove_box", "pause_box", "resume_box", "stop_box", "fork_box", "batch", "frame",
      "page_snapshot", "page_read", "page_element", "desktop_node", "exec", "read_file", "write_file", "list_files", "read_trace", "takeover", "give_back", "viewer_ticket"]) {
      expect(names, n).toContain(n);
    }
    const byName = (n: string) => tools.find((t) => t.name === n)!;
    expect(Object.keys(byName("launch_box").inputSchema.properties!)).toEqual(expect.arrayContaining(["spec", "placement", "ttl_minutes"]));
    // The batch's steps are the /v1 vocabulary (StepSchema): an agent sees every step type.
    const steps = (byName("batch").inputSchema.properties!.actions as any).items.oneOf.map((o: any) => o.properties.type.const);
    expect(steps).toEqual(expect.arrayContaining(["click", "type", "open_url", "on_page", "exec"]));
    expect(byName("remove_box").annotations).toMatchObject({ destructiveHint: true });
  });

  it("arguments that do not fit a tool's input are a tool error `bad_request: …` naming the field, as /v1's own", async () => {
    const r = await call("get_box", { box: 123 });
    expect(r.isError).toBe(true);
    expect(r.content[0]!.text).toMatch(/^bad_request: box: /);
    const step = await call("batch", { box: "box_x", actions: [{ type: "click", x: "left" }] });
    expect(step.isError).toBe(true);
    expect(step.content[0]!.text).toMatch(/^bad_request: .*actions\.0/);
    const unknown = (await client.callTool({ name: "no_such_tool", arguments: {} })) as ToolResult;
    expect(unknown.isError).toBe(true);
    expect(unknown.content[0]!.text).toMatch(/^not_found: /);
  });

  it("launches a box, types into a page by a batch, sees it in the page, gets a frame image and the trace", async () => {
    const launched = await call("launch_box", { spec: { desktop: { width: 1024, height: 640 } } });
    expect(launched.isError, launched.content[0]?.text).toBeFalsy();
    const box = body(launched);
    expect(box).toMatchObject({ state: "ready", width: 1024, height: 640 });
    boxId = box.id;
    expect(body(await call("list_boxes", {})).boxes.map((b: any) => b.id)).toEqual([boxId]);
    await serveSite({ api: apiAs(server, key.secret) }, boxId);

    const ran = await call("batch", {
      box: boxId,
      actions: [
        { type: "open_url", url: `${SITE}/element-login.html` },
        { type: "on_page", what: { op: "wait_for", query: "Email" } },
        { type: "on_page", what: { op: "click", query: "Email" } },
        { type: "type", text: "ada@example.com" },
      ],
    });
    expect(ran.isError, ran.content[0]?.text).toBeFalsy();
    expect(body(ran).results.map((r: any) => r.ok)).toEqual([true, true, true, true]);

    // The batch answers once its keys are sent to X; Chromium takes them in at its own pace, and a
    // snapshot (over DevTools, another path) right after may come first on a loaded machine (CI
    // run 85: no value yet). The page holds them all soon after.
    const email = async () => body(await call("page_snapshot", { box: boxId })).elements.find((e: any) => e.name === "Email");
    const inPage = await until("the typed address in the page", email, (e) => e?.value === "ada@example.com", 10_000);
    expect(inPage).toMatchObject({ role: "textbox", value: "ada@example.com" });

    const shot = await call("frame", { box: boxId, screen: 0 });
    expect(shot.isError, shot.content[0]?.text).toBeFalsy();
    const image = shot.content.find((b) => b.type === "image")!;
    expect(image.mimeType).toBe("image/png");
    const png = decodePng(Buffer.from(image.data!, "base64"));
    expect([png.width, png.height]).toEqual([1024, 640]);

    const trace = body(await call("read_trace", { box: boxId }));
    const typed = trace.entries.find((e: any) => e.event === "acted" && e.data.step.type === "type");
    expect(typed, JSON.stringify(trace.entries.map((e: any) => e.event))).toBeTruthy();
    // The text typed is what the trace recorded; the step came through /v1 like any other.
    expect(JSON.stringify(typed.data.step)).toContain("ada@example.com");
  });

  it("no key: 401 with the /v1 error body", async () => {
    const res = await rawPost(undefined, { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } } });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ code: "unauthorized", retryable: false });
    const bad = await rawPost("holm_sk_notakey", { jsonrpc: "2.0", id: 1, method: "tools/list" }, { "mcp-session-id": transport.sessionId! });
    expect(bad.status).toBe(401);
  });

  it("another key cannot use this session: 404 as for an unknown session, for POST, GET and DELETE", async () => {
    const sid = transport.sessionId!;
    const post = await rawPost(other.secret, { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "list_boxes", arguments: {} } }, { "mcp-session-id": sid });
    expect(post.status).toBe(404);
    expect(await post.json()).toMatchObject({ error: { code: -32001 } });
    const headers = { authorization: `Bearer ${other.secret}`, "mcp-session-id": sid, accept: "text/event-stream" };
    expect((await fetch(`${server.base}/mcp`, { headers })).status).toBe(404);
    expect((await fetch(`${server.base}/mcp`, { method: "DELETE", headers })).status).toBe(404);
    // The owner's session is untouched.
    expect((await call("get_box", { box: boxId })).isError).toBeFalsy();
  });

  it("a cross-site Origin is refused (403), even with a good key and session", async () => {
    const res = await rawPost(key.secret, { jsonrpc: "2.0", id: 8, method: "tools/list" }, { "mcp-session-id": transport.sessionId!, origin: "https://evil.example" });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ code: "forbidden" });
    const get = await fetch(`${server.base}/mcp`, { headers: { authorization: `Bearer ${key.secret}`, "mcp-session-id": transport.sessionId!, accept: "text/event-stream", "sec-fetch-site": "cross-site" } });
    expect(get.status).toBe(403);
    const form = await fetch(`${server.base}/mcp`, { method: "POST", headers: { authorization: `Bearer ${key.secret}`, "content-type": "text/plain" }, body: "{}" });
    expect(form.status).toBe(400);
    expect(await form.json()).toMatchObject({ code: "bad_request", message: expect.stringContaining("application/json") });
  });

  it("during a takeover the agent's tools are refused with the takeover's code; reads go on", async () => {
    const taken = await server.api(`/v1/boxes/${boxId}/screens/0/takeover`, { method: "POST", json: { shared: false } });
    expect(taken.status).toBe(200);
    try {
      const refused = await call("batch", { box: boxId, actions: [{ type: "click", at: { x: 10, y: 10 } }] });
      expect(refused.isError).toBe(true);
      expect(refused.content[0]!.text).toMatch(/^denied: /);
      const el = await call("page_element", { box: boxId, what: { op: "fill", query: "Email", text: "mallory@example.com" } });
      expect(el.isError).toBe(true);
      expect(el.content[0]!.text).toMatch(/^denied: /);
      // A native widget operation that acts is refused too; one that reads is not.
      const widget = await call("desktop_node", { box: boxId, what: { op: "set", node: { query: "Email", role: "text" }, value: "mallory@example.com" } });
      expect(widget.isError).toBe(true);
      expect(widget.content[0]!.text).toMatch(/^denied: /);
      const found = body(await call("desktop_node", { box: boxId, what: { op: "find", node: { query: "Email", role: "text" } } }));
      expect(found.nodes[0]).toMatchObject({ app: "Chromium", value: "ada@example.com" });
      expect((await call("frame", { box: boxId })).isError).toBeFalsy();
      const snap = body(await call("page_snapshot", { box: boxId }));
      expect(snap.elements.find((e: any) => e.name === "Email").value).toBe("ada@example.com");
    } finally {
      await server.api(`/v1/boxes/${boxId}/screens/0/takeover`, { method: "DELETE" });
    }
  });

  it("resumable: a dropped stream's answer is replayed by Last-Event-ID, to its own key only", async () => {
    const sid = transport.sessionId!;
    const res = await rawPost(
      key.secret,
      { jsonrpc: "2.0", id: 4242, method: "tools/call", params: { name: "exec", arguments: { box: boxId, argv: ["sh", "-c", "sleep 1; echo resumed"] } } },
      { "mcp-session-id": sid },
    );
    expect(res.status).toBe(200);
    // The priming event gives the stream's first id; then the client goes away before the answer.
    const { events } = await readEvents(res, () => true);
    const primed = events[0]!.id!;
    expect(primed).toBeTruthy();
    await new Promise((r) => setTimeout(r, 2500));
    const headers = { "mcp-session-id": sid, accept: "text/event-stream", "mcp-protocol-version": "2025-11-25", "last-event-id": primed };
    const stranger = await fetch(`${server.base}/mcp`, { headers: { ...headers, authorization: `Bearer ${other.secret}` } });
    expect(stranger.status).toBe(404);
    const again = await fetch(`${server.base}/mcp`, { headers: { ...headers, authorization: `Bearer ${key.secret}` } });
    expect(again.status).toBe(200);
    const replay = await readEvents(again, (e) => e.data.includes('"id":4242'));
    const answer = JSON.parse(replay.events.find((e) => e.data.includes('"id":4242'))!.data);
    expect(JSON.parse(answer.result.content[0].text)).toMatchObject({ code: 0, stdout: "resumed\n" });
    const unknown = await fetch(`${server.base}/mcp`, { headers: { ...headers, authorization: `Bearer ${key.secret}`, "last-event-id": "999999" } });
    expect(unknown.status).toBe(400);
  });

  it("a revoked key's session ends: its open SSE stream closes and the session is gone", async () => {
    const doomed = await c.createKey(ada, "doomed");
    // A session opened by hand, so the test holds its GET stream (the SDK client keeps its own).
    const init = await rawPost(doomed.secret, { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } } });
    const sid = init.headers.get("mcp-session-id")!;
    expect(sid).toBeTruthy();
    await readEvents(init, (e) => e.data.includes('"id":1'));
    expect((await rawPost(doomed.secret, { jsonrpc: "2.0", method: "notifications/initialized" }, { "mcp-session-id": sid })).status).toBe(202);
    const stream = await fetch(`${server.base}/mcp`, {
      headers: { authorization: `Bearer ${doomed.secret}`, "mcp-session-id": sid, accept: "text/event-stream", "mcp-protocol-version": "2025-11-25" },
    });
    expect(stream.status).toBe(200);
    const csrf = c.csrfIn(await c.page(ada, "/keys"));
    const t0 = Date.now();
    expect((await c.form(ada, "/keys?index", { intent: "revoke", id: doomed.id, csrf })).status).toBe(200);
    const { ended } = await readEvents(stream, () => false, 5000);
    expect(ended).toBe(true);
    expect(Date.now() - t0).toBeLessThan(3000);
    const after = await rawPost(doomed.secret, { jsonrpc: "2.0", id: 2, method: "tools/list" }, { "mcp-session-id": sid });
    expect(after.status).toBe(401);
  });

  it("on a paused box a tool answers before the client's own 60 s timeout: `timeout: … paused …`, retryable; after resume_box it works", async () => {
    expect(body(await call("pause_box", { box: boxId })).state).toBe("paused");
    try {
      const t0 = Date.now();
      // The SDK client's default request timeout (60 s): the server must answer first.
      const r = (await client.callTool({ name: "frame", arguments: { box: boxId } })) as ToolResult;
      expect(r.isError).toBe(true);
      expect(r.content[0]!.text).toMatch(new RegExp(`^timeout: box ${boxId} is still paused after 3 s; .*resume_box`));
      expect(Date.now() - t0).toBeLessThan(10_000);
      // The same bound on /v1 by RFC 7240's Prefer: wait.
      const res = await fetch(`${server.base}/v1/boxes/${boxId}/screens/0/frame`, { headers: { authorization: `Bearer ${key.secret}`, prefer: "wait=1" } });
      expect(res.status).toBe(504);
      expect(await res.json()).toMatchObject({ code: "timeout", retryable: true });
    } finally {
      expect(body(await call("resume_box", { box: boxId })).state).toBe("ready");
    }
    const shot = await call("frame", { box: boxId });
    expect(shot.isError, shot.content[0]?.text).toBeFalsy();
  }, 90_000);

  it("remove_box needs confirm: true; then the box is gone", async () => {
    const refused = await call("remove_box", { box: boxId });
    expect(refused.isError).toBe(true);
    expect(refused.content[0]!.text).toMatch(/^bad_request: .*confirm: true/);
    expect(body(await call("get_box", { box: boxId })).state).toBe("ready");
    const removed = await call("remove_box", { box: boxId, confirm: true });
    expect(removed.isError, removed.content[0]?.text).toBeFalsy();
    const gone = await call("get_box", { box: boxId });
    expect(gone.isError).toBe(true);
    expect(gone.content[0]!.text).toMatch(/^gone: /);
  });

  it("DELETE ends the session", async () => {
    const sid = transport.sessionId!;
    await transport.terminateSession();
    const res = await rawPost(key.secret, { jsonrpc: "2.0", id: 9, method: "tools/list" }, { "mcp-session-id": sid });
    expect(res.status).toBe(404);
  });
});
