import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EMPTY_BODY_SHA256, Verifier } from "../../images/x11/agent/auth";

// The server's side of the server↔agent channel: its signatures verify with the agent's own
// verifier (two implementations of one contract, images/README.md), cost microseconds, and an
// answer is read only up to a cap.

process.env.HOLM_SECRET_KEY = "agent-channel-unit-test-key-0123456789";
const { agentSecret, readCapped, signAgentRequest, vncPassword } = await import("~/models/agent.server");

describe("signing", () => {
  it("signs what the agent's verifier takes, once, for that method, target and body only", () => {
    const box = "box_0123456789abcdef";
    const v = new Verifier(agentSecret(box));
    const body = Buffer.from(JSON.stringify({ actions: [] }));
    const h = signAgentRequest(box, "POST", "/screens/0/batch?x=1", body);
    const ok = v.check("POST", "/screens/0/batch?x=1", h);
    expect(ok).toMatchObject({ ok: true });
    expect(ok.ok && ok.bodySha256).not.toBe(EMPTY_BODY_SHA256);
    expect(v.check("POST", "/screens/0/batch?x=1", h)).toMatchObject({ ok: false, why: "replayed request" });
    expect(v.check("POST", "/screens/0/batch?x=2", signAgentRequest(box, "POST", "/screens/0/batch?x=1", body))).toMatchObject({ ok: false });
    expect(v.check("GET", "/exec", signAgentRequest(box, "POST", "/exec"))).toMatchObject({ ok: false });
    // Another box's secret signs nothing here.
    expect(v.check("GET", "/exec", signAgentRequest("box_fedcba9876543210", "GET", "/exec"))).toMatchObject({ ok: false, why: "bad signature" });
  });

  it("keeps the agent secret and the VNC password apart, and per box", () => {
    const a = "box_0123456789abcdef";
    expect(vncPassword(a)).toMatch(/^[!-~]{8}$/);
    expect(vncPassword(a)).toBe(vncPassword(a));
    expect(vncPassword(a)).not.toBe(vncPassword("box_0123456789abcdee"));
    expect(agentSecret(a)).not.toContain(vncPassword(a));
  });

  it("costs microseconds per request (median of 5,000 signatures, secret cached)", () => {
    const body = Buffer.from(JSON.stringify({ actions: [{ type: "click", at: { x: 1, y: 1 } }] }));
    const times: number[] = [];
    for (let i = 0; i < 5000; i++) {
      const t0 = performance.now();
      signAgentRequest("box_0123456789abcdef", "POST", "/screens/0/batch", body);
      times.push(performance.now() - t0);
    }
    times.sort((x, y) => x - y);
    const median = times[times.length >> 1]!;
    console.log(`signAgentRequest: median ${(median * 1000).toFixed(1)} µs`);
    expect(median).toBeLessThan(0.1);
  });
});

describe("reading an answer with a cap", () => {
  let server: http.Server;
  let base: string;
  let streamed = 0;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (req.url === "/declared") {
        res.writeHead(200, { "content-length": String(1024 ** 3) });
        res.write(Buffer.alloc(1024));
        return; // never ends: the reader must not wait for it
      }
      if (req.url === "/endless") {
        res.writeHead(200, { "content-type": "application/json" });
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        const pump = () => {
          while (res.write(chunk)) {
            streamed += chunk.length;
            if (streamed > 256 * 1024 * 1024) return res.end();
          }
          res.once("drain", pump);
        };
        pump();
        res.on("close", () => undefined);
        return;
      }
      res.end('{"ok":true}');
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => server?.close());

  it("reads an answer under the cap", async () => {
    expect((await readCapped(await fetch(`${base}/small`), 100)).toString()).toBe('{"ok":true}');
  });

  it("refuses an answer that declares more than the cap, without reading it", async () => {
    await expect(readCapped(await fetch(`${base}/declared`), 1024 * 1024)).rejects.toMatchObject({
      code: "transport",
      retryable: false,
      message: expect.stringMatching(/larger than 1048576 bytes/),
    });
  });

  it("stops reading an endless answer at the cap", async () => {
    const t0 = performance.now();
    await expect(readCapped(await fetch(`${base}/endless`), 4 * 1024 * 1024)).rejects.toMatchObject({ code: "transport" });
    expect(performance.now() - t0).toBeLessThan(5000);
    // The sender was cut off long before it could push its 256 MiB.
    await new Promise((r) => setTimeout(r, 200));
    expect(streamed).toBeLessThan(64 * 1024 * 1024);
  });
});
