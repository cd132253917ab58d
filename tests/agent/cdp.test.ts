// The agent's minimal WebSocket client for CDP (Node 18 has none), from source, against the ws
// package's server (which refuses unmasked client frames): the handshake headers Chromium insists
// on, 16- and 64-bit lengths both ways, fragments, ping/pong, events, errors, timeouts and close.
import { describe, expect, it } from "vitest";
import http from "node:http";
import { WebSocketServer } from "ws";
import { CdpError, CdpSocket } from "../../images/x11/agent/cdp";
import { until } from "./harness";

describe("CdpSocket (the agent's WebSocket client) against the ws package's server", () => {
  it("handshakes with an IP Host and no Origin; masks, fragments, pings, big frames, errors, close", async () => {
    const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await new Promise((r) => wss.once("listening", r));
    const port = (wss.address() as { port: number }).port;
    let headers: http.IncomingHttpHeaders = {};
    let pongs = 0;
    wss.on("connection", (sock, req) => {
      headers = req.headers;
      sock.on("pong", () => pongs++);
      sock.on("message", (data, binary) => {
        expect(binary).toBe(false);
        const { id, method, params } = JSON.parse(String(data));
        if (method === "echo") sock.send(JSON.stringify({ id, result: { params } }));
        else if (method === "big") {
          sock.ping();
          sock.send(JSON.stringify({ method: "Some.event", params: {} }));
          sock.send(JSON.stringify({ id, result: { s: "y".repeat(100_000) } }));
        } else if (method === "fragments") {
          const text = JSON.stringify({ id, result: { ok: "ü".repeat(70_000) } });
          const b = Buffer.from(text);
          sock.send(b.subarray(0, 10), { fin: false, binary: false });
          sock.send(b.subarray(10, 100_000), { fin: false, binary: false });
          sock.send(b.subarray(100_000), { fin: true, binary: false });
        } else if (method === "fail") sock.send(JSON.stringify({ id, error: { code: -32000, message: "No such thing" } }));
        else if (method === "bye") sock.close(1000);
        // "silent": no answer
      });
    });
    try {
      const ws = await CdpSocket.connect(port, "/devtools/page/X");
      expect(headers.host).toBe(`127.0.0.1:${port}`);
      expect(headers.origin).toBeUndefined();
      const big = "x".repeat(200_000); // a 64-bit length frame from the client
      expect(await ws.send("echo", { big, small: "é" })).toEqual({ params: { big, small: "é" } });
      expect(((await ws.send("big")) as { s: string }).s).toHaveLength(100_000);
      expect(((await ws.send("fragments")) as { ok: string }).ok).toBe("ü".repeat(70_000));
      await until(() => pongs === 1, "pong");
      await expect(ws.send("fail")).rejects.toBeInstanceOf(CdpError);
      await expect(ws.send("silent", {}, 100)).rejects.toMatchObject({ code: "timeout" });
      const pending = ws.send("silent", {}, 5000);
      await ws.send("bye").catch(() => undefined);
      await expect(pending).rejects.toMatchObject({ code: "failed" });
      await expect(ws.send("echo")).rejects.toMatchObject({ code: "failed" });
      ws.close();
    } finally {
      wss.close();
    }
  });

  it("refuses a server that does not upgrade", async () => {
    const srv = http.createServer((_req, res) => res.writeHead(403).end());
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
    try {
      await expect(CdpSocket.connect((srv.address() as { port: number }).port, "/x")).rejects.toThrow(/403/);
    } finally {
      srv.close();
    }
  });
});
