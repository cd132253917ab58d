// Signed requests (images/README.md): what the agent takes and what it refuses, the DevTools
// relay against a stand-in DevTools server, and what a signature costs. No display needed.
import { createHash, createHmac } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import WebSocket from "ws";
import { EMPTY_BODY_SHA256, MAX_SKEW_MS, Verifier, canonical, sign } from "../../images/x11/agent/auth";
import { type Agent, cleanup, freePort, median, startAgent } from "./harness";

let agent: Agent;
let cdpPort: number;
let devtools: http.Server;
/** What the stand-in DevTools saw of each request: path and headers. */
const seen: { url: string; headers: http.IncomingHttpHeaders }[] = [];

beforeAll(async () => {
  cdpPort = await freePort();
  devtools = http.createServer((req, res) => {
    seen.push({ url: req.url ?? "", headers: req.headers });
    if (req.url === "/json/version") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ Browser: "Stand-in/1.0", webSocketDebuggerUrl: `ws://127.0.0.1:${cdpPort}/devtools/browser/b1` }));
      return;
    }
    res.writeHead(404);
    res.end("no such target");
  });
  const wss = new WebSocketServer({ server: devtools });
  wss.on("connection", (ws, req) => {
    seen.push({ url: req.url ?? "", headers: req.headers });
    ws.on("message", (d) => ws.send(`echo ${String(d)}`));
  });
  await new Promise<void>((r) => devtools.listen(cdpPort, "127.0.0.1", r));
  agent = await startAgent({ HOLM_DISPLAY_BASE: "9990", HOLM_CDP_PORT_BASE: String(cdpPort) });
});

afterAll(async () => {
  devtools?.close();
  await cleanup();
});

const raw = (p: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) =>
  fetch(agent.url + p, { method: init.method ?? "GET", headers: init.headers, body: init.body });

/** A signature made by hand: `sign` with a chosen time, or parts swapped. */
function forged(fields: { method?: string; target: string; t?: number; nonce?: string; body?: string; secret?: string }): string {
  const t = String(fields.t ?? Date.now());
  const n = fields.nonce ?? `n${Math.random().toString(36).slice(2)}xxxxxxxxxxxxxxxx`.slice(0, 22);
  const b = fields.body === undefined ? EMPTY_BODY_SHA256 : createHash("sha256").update(fields.body).digest("hex");
  const s = createHmac("sha256", fields.secret ?? agent.secret)
    .update(canonical(fields.method ?? "GET", fields.target, t, n, b))
    .digest("base64url");
  return `Holm-HMAC-SHA256 t=${t},n=${n},b=${b},s=${s}`;
}

describe("signed requests", () => {
  it("takes a signed request once: the same bytes again are refused", async () => {
    const p = "/files/list?path=/tmp";
    const authorization = sign(agent.secret, "GET", p);
    expect((await raw(p, { headers: { authorization } })).status).toBe(200);
    const again = await raw(p, { headers: { authorization } });
    expect(again.status).toBe(401);
    expect(await again.json()).toMatchObject({ code: "unauthorized", message: expect.stringMatching(/replayed/) });
  });

  it("refuses a signature made for another path, query or method", async () => {
    const forList = sign(agent.secret, "GET", "/files/list?path=/tmp");
    expect((await raw("/files/list?path=/etc", { headers: { authorization: forList } })).status).toBe(401);
    expect((await raw("/files/glob?pattern=*", { headers: { authorization: sign(agent.secret, "GET", "/files/list?path=/tmp") } })).status).toBe(401);
    const body = JSON.stringify({ argv: ["true"] });
    expect((await raw("/exec", { method: "POST", body, headers: { authorization: sign(agent.secret, "PUT", "/exec", body) } })).status).toBe(401);
  });

  it("refuses a body other than the one signed, and does not act on it", async () => {
    const signedBody = JSON.stringify({ argv: ["true"] });
    const other = JSON.stringify({ argv: ["touch", "/tmp/holm-agent-auth-should-not-exist"] });
    const res = await raw("/exec", { method: "POST", body: other, headers: { authorization: sign(agent.secret, "POST", "/exec", signedBody), "content-type": "application/json" } });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ message: expect.stringMatching(/body/) });
    const check = await agent.call("POST", "/exec", { argv: ["test", "-e", "/tmp/holm-agent-auth-should-not-exist"] });
    expect(check.body.code).toBe(1);
  });

  it("refuses a stale or future timestamp, a wrong key and a malformed header", async () => {
    const target = "/files/list?path=/tmp";
    for (const authorization of [
      forged({ target, t: Date.now() - MAX_SKEW_MS - 2000 }),
      forged({ target, t: Date.now() + MAX_SKEW_MS + 2000 }),
      forged({ target, secret: `${agent.secret}x` }),
      forged({ target }).replace(/s=.*/, "s=AAAA"),
      `Bearer ${agent.secret}`,
      "",
    ]) {
      const res = await raw(target, { headers: { authorization } });
      expect(res.status, authorization).toBe(401);
    }
    expect((await raw(target, { headers: { authorization: forged({ target }) } })).status).toBe(200);
  });

  it("refuses a request signed before the agent started (a replay after a restart)", async () => {
    const fresh = await startAgent({ HOLM_DISPLAY_BASE: "9991" });
    const target = "/files/list?path=/tmp";
    const before = forged({ target, t: fresh.spawnedAt - 2500, secret: fresh.secret });
    expect((await fetch(fresh.url + target, { headers: { authorization: before } })).status).toBe(401);
    expect((await fresh.call("GET", target)).status).toBe(200);
  });

  it("takes its secret from the file the server writes as the box boots, and signs nothing before", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-secret-"));
    const file = path.join(dir, "agent.secret");
    const boxed = await startAgent({ HOLM_DISPLAY_BASE: "9992", HOLM_AGENT_SECRET: "", HOLM_AGENT_SECRET_FILE: file });
    const target = "/files/list?path=/tmp";
    const secret = "secret-from-the-file";
    const call = () => fetch(boxed.url + target, { headers: { authorization: sign(secret, "GET", target) } });
    expect((await call()).status).toBe(401);
    fs.writeFileSync(file, "secret-from-the"); // half written: not taken
    expect((await call()).status).toBe(401);
    fs.writeFileSync(file, `${secret}\n`, { mode: 0o600 });
    expect((await call()).status).toBe(200);
    // Nothing it runs sees the variable or the file's path.
    const env = await fetch(boxed.url + "/exec", {
      method: "POST",
      headers: { authorization: sign(secret, "POST", "/exec", '{"argv":["env"]}'), "content-type": "application/json" },
      body: '{"argv":["env"]}',
    }).then((r) => r.json());
    expect(env.stdout).toContain("PATH=");
    expect(env.stdout).not.toContain("HOLM_AGENT_SECRET");
    expect(env.stdout).not.toContain(secret);
  });

  it("leaves /health open, and it tells nothing secret", async () => {
    const res = await raw("/health");
    const text = await res.text();
    expect(text).not.toContain(agent.secret);
    expect(Object.keys(JSON.parse(text)).sort()).toEqual(["ok", "screens"]);
  });

  it("costs microseconds: sign + verify of a small request, median of 2,000", () => {
    const v = new Verifier("s".repeat(43));
    const body = JSON.stringify({ actions: [{ type: "click", at: { x: 10, y: 10 } }] });
    const times: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const t0 = performance.now();
      const h = sign("s".repeat(43), "POST", "/screens/0/batch", body);
      const r = v.check("POST", "/screens/0/batch", h);
      times.push(performance.now() - t0);
      expect(r.ok).toBe(true);
    }
    console.log(`sign + verify: median ${(median(times) * 1000).toFixed(1)} µs`);
    expect(median(times)).toBeLessThan(0.2);
  });
});

describe("DevTools relay", () => {
  it("refuses an unsigned request, over HTTP and as a WebSocket", async () => {
    const before = seen.length;
    expect((await raw("/screens/0/cdp/json/version")).status).toBe(401);
    const status = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`${agent.url.replace("http", "ws")}/screens/0/cdp/devtools/browser/b1`);
      ws.on("unexpected-response", (_q, r) => resolve(r.statusCode ?? 0));
      ws.on("open", () => resolve(101));
      ws.on("error", () => resolve(-1));
    });
    expect(status).toBe(401);
    // Only /health's own probe may have reached DevTools meanwhile.
    expect(seen.slice(before).filter((r) => r.url !== "/json/version")).toHaveLength(0);
    expect(seen.length).toBe(before);
  });

  it("refuses every route but /health unsigned or with a forged signature (the viewer password route too)", async () => {
    const { AGENT_ROUTES, agentPath } = await import("../../app/protocol/agent");
    for (const [name, [method, pattern]] of Object.entries(AGENT_ROUTES)) {
      if (name === "health") continue;
      const params = Object.fromEntries([...pattern.matchAll(/:(\w+)/g)].map((m) => [m[1], m[1] === "n" ? "0" : "x"]));
      const p = agentPath(name as keyof typeof AGENT_ROUTES, params as never);
      const body = method === "GET" || method === "DELETE" ? undefined : JSON.stringify({ epoch: 7, issuer: "key:x", on: true });
      const headers: Record<string, string> = body ? { "content-type": "application/json" } : {};
      expect((await raw(p, { method, headers, body })).status, `${method} ${p} unsigned`).toBe(401);
      const forged = { ...headers, authorization: "HOLM1 t=1,nonce=aaaaaaaaaaaaaaaaaaaaaa,body=00,sig=00" };
      expect((await raw(p, { method, headers: forged, body })).status, `${method} ${p} forged`).toBe(401);
    }
  });

  it("relays a signed HTTP request with Host rewritten, no Origin and no signature", async () => {
    const res = await agent.call("GET", "/screens/0/cdp/json/version", undefined, { origin: "http://evil.example", host: "rebind.example" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ Browser: "Stand-in/1.0" });
    const got = seen.at(-1)!;
    expect(got.url).toBe("/json/version");
    expect(got.headers.host).toBe(`127.0.0.1:${cdpPort}`);
    expect(got.headers.origin).toBeUndefined();
    expect(got.headers.authorization).toBeUndefined();
    // Chromium's own answer passes as it is.
    expect((await agent.call("GET", "/screens/0/cdp/json/nothing")).status).toBe(404);
    expect((await agent.call("GET", "/screens/3/cdp/json/version")).status).toBe(404);
  });

  it("relays a signed WebSocket both ways, with Host rewritten and no Origin", async () => {
    const p = "/screens/0/cdp/devtools/browser/b1";
    const authorization = sign(agent.secret, "GET", p);
    const ws = new WebSocket(`${agent.url.replace("http", "ws")}${p}`, {
      headers: { authorization },
      origin: "http://evil.example",
    });
    const echoed = await new Promise<string>((resolve, reject) => {
      ws.on("open", () => ws.send("hello"));
      ws.on("message", (d) => resolve(String(d)));
      ws.on("error", reject);
      ws.on("unexpected-response", (_q, r) => reject(new Error(`HTTP ${r.statusCode}`)));
    });
    expect(echoed).toBe("echo hello");
    ws.close();
    const got = seen.at(-1)!;
    expect(got.url).toBe("/devtools/browser/b1");
    expect(got.headers.host).toBe(`127.0.0.1:${cdpPort}`);
    expect(got.headers.origin).toBeUndefined();
    expect(got.headers.authorization).toBeUndefined();
    // The same handshake again is a replay.
    const replay = await new Promise<number>((resolve) => {
      const s = net.connect(Number(new URL(agent.url).port), "127.0.0.1", () =>
        s.write(
          `GET ${p} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n` +
            `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: ${authorization}\r\n\r\n`,
        ),
      );
      s.once("data", (d) => {
        resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(String(d))?.[1] ?? 0));
        s.destroy();
      });
    });
    expect(replay).toBe(401);
  });
});
