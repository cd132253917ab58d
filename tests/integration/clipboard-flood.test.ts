import { describe, expect, it } from "vitest";
import { type TestServer, json } from "../support/server";
import { serverWithOneBox } from "../support/one-box";

// What is in a box's clipboard is the box's: any process there (or a page, with a copy in a
// click the agent made) can own it with as much text as it likes. Reading it must not cost the
// agent its life: on the code before this, a 300 MB clipboard read filled the agent's memory, the
// kernel killed it, and the box stopped.

let server: TestServer;
let box: any;

serverWithOneBox((s, b) => {
  server = s;
  box = b;
});

const api = (path: string, init: RequestInit & { json?: unknown } = {}) =>
  server.api(`/v1/boxes/${box.id}${path}`, { signal: AbortSignal.timeout(60_000), ...init });

describe("a clipboard a process in the box filled", () => {
  it("300 MB: a read answers 422 naming the limit, and the agent lives on; a clipboard of normal size reads as before", async () => {
    const fill = await json(
      await api("/exec", {
        method: "POST",
        json: { argv: ["sh", "-c", "head -c 300000000 /dev/zero | tr '\\0' x >/tmp/big && xclip -selection clipboard -i /tmp/big && rm /tmp/big"], timeout_ms: 60_000 },
      }),
    );
    expect(fill.code, JSON.stringify(fill)).toBe(0);

    const res = await api("/screens/0/clipboard");
    const out = await json(res);
    expect(res.status, JSON.stringify(out).slice(0, 300)).toBe(422);
    expect(out).toMatchObject({ code: "failed", retryable: false });
    expect(out.message).toMatch(/clipboard holds more than/);
    // The same through a batch's clipboard step.
    const batch = await json(await api("/screens/0/actions", { method: "POST", json: { actions: [{ type: "clipboard" }] } }));
    expect(JSON.stringify(batch).slice(0, 500)).toMatch(/clipboard holds more than/);

    const cursor = await api("/screens/0/cursor");
    expect(cursor.status, await cursor.text()).toBe(200);
    expect((await json(await server.api(`/v1/boxes/${box.id}`))).state).toBe("ready");

    const text = "y".repeat(900_000);
    expect((await api("/screens/0/clipboard", { method: "PUT", json: { text } })).status).toBe(200);
    const again = await json(await api("/screens/0/clipboard"));
    expect(again.text).toBe(text);
  });
});
