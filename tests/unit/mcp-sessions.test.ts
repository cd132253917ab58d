import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { SESSION_LIMITS, findSession, openSession, openSessionCount, sessionsToClose, startRequestIdsAt } from "~/mcp/sessions.server";

// MCP sessions without HTTP: bound to the principal that opened them, and bounded per principal
// (the least recently used one goes).

const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } };
const init = () =>
  new Request("http://127.0.0.1/mcp", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify(initialize),
  });

async function open(principal: string): Promise<string> {
  const res = await openSession(principal, null, init(), { parsedBody: initialize });
  await res.body?.cancel();
  return res.headers.get("mcp-session-id")!;
}

describe("MCP sessions", () => {
  it("answer only the principal that opened them", async () => {
    const id = await open("server");
    expect(findSession(id, "server")?.id).toBe(id);
    expect(findSession(id, "key:key_other")).toBeUndefined();
    expect(findSession("not-a-session", "server")).toBeUndefined();
  });

  it("number a server's own requests from where startRequestIdsAt says (the SDK's private counter is still the one)", async () => {
    // Each copy of a session starts at random so that a relayed answer reaches only the copy
    // that asked; were the SDK to rename its counter, every copy would count from 0 unseen.
    const server = new McpServer({ name: "t", version: "1" });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const sent: JSONRPCMessage[] = [];
    clientSide.onmessage = (m) => void sent.push(m);
    await clientSide.start();
    await server.connect(serverSide);
    startRequestIdsAt(server, 123_456_789);
    const ping = server.server.ping().catch(() => undefined);
    await expect.poll(() => sent.length).toBe(1);
    expect(sent[0]).toMatchObject({ method: "ping", id: 123_456_789 });
    await server.close();
    await ping;
  });

  it("keep at most perPrincipal per principal, dropping the least recently used", async () => {
    const ids: string[] = [];
    for (let i = 0; i < SESSION_LIMITS.perPrincipal + 2; i++) {
      ids.push(await open("server"));
      await new Promise((r) => setTimeout(r, 2));
    }
    expect(openSessionCount("server")).toBe(SESSION_LIMITS.perPrincipal);
    expect(findSession(ids[0]!, "server")).toBeUndefined();
    expect(findSession(ids.at(-1)!, "server")).toBeDefined();
  });

  it("keep a workspace to perOwner however many keys it makes, and at the total take from the largest holder, never refusing another workspace", () => {
    const limits = { ...SESSION_LIMITS, perPrincipal: 4, perOwner: 8, total: 20 };
    let t = 0;
    const held: { principal: string; owner: string | null; lastSeenMs: number }[] = [];
    const open = (principal: string, owner: string | null) => {
      for (const s of sessionsToClose(held, principal, owner, limits)) held.splice(held.indexOf(s), 1);
      held.push({ principal, owner, lastSeenMs: ++t });
    };
    const of = (owner: string) => held.filter((s) => s.owner === owner).length;
    // One workspace, 32 keys, 4 sessions each (the attack): it keeps 8, its most recent.
    for (let k = 0; k < 32; k++) for (let i = 0; i < 4; i++) open(`key:b${k}`, "ws_bob");
    expect(of("ws_bob")).toBe(8);
    expect(Math.min(...held.map((s) => s.lastSeenMs))).toBe(t - 7);
    // Open sign-ups: three workspaces of the attacker's at their limit fill the server (24 > 20)…
    for (const ws of ["ws_b2", "ws_b3"]) for (let k = 0; k < 8; k++) open(`key:${ws}${k}`, ws);
    expect(held.length).toBeLessThanOrEqual(limits.total);
    // …and another workspace still gets its sessions, from the largest holders.
    for (let i = 0; i < 3; i++) open("key:ada", "ws_ada");
    expect(of("ws_ada")).toBe(3);
    expect(held.length).toBeLessThanOrEqual(limits.total);
    // A key past its own limit loses its own oldest, not another's.
    for (let i = 0; i < 3; i++) open("key:ada", "ws_ada");
    expect(of("ws_ada")).toBe(4);
  });
});
