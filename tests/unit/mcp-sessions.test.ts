import { describe, expect, it } from "vitest";
import { SESSION_LIMITS, findSession, openSession, openSessionCount } from "~/mcp/sessions.server";

// MCP sessions without HTTP: bound to the principal that opened them, and bounded per principal
// (the least recently used one goes).

const init = (id: number) =>
  new Request("http://127.0.0.1/mcp", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
  });

async function open(principal: string): Promise<string> {
  const transport = await openSession(principal, null);
  const res = await transport.handleRequest(init(1));
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
});
