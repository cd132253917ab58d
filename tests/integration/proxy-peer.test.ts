import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { consoleClient } from "../support/console";
import { outsideAddress } from "../support/outside";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// holm behind a TLS proxy on the same host, as docs/reverse-proxy.md's nginx recipe sets it up:
// the proxy keeps Host, says `X-Forwarded-Proto: https` and appends the client's address to
// `X-Forwarded-For` (nginx's $proxy_add_x_forwarded_for). The proxy here is a small node:http
// forwarder (no TLS: what matters is what reaches holm). A remote client is a real one: it
// connects to the proxy on this machine's non-loopback address, so the proxy sees and passes on
// an address that is not loopback, as nginx would for someone on the internet.

const PUBLIC = "https://holm.example.test";
const outside = outsideAddress;

interface Proxy {
  /** The proxy as a remote client reaches it (its non-loopback address). */
  remote: string;
  /** The proxy as a client on the machine reaches it (loopback). */
  local: string;
  close(): Promise<void>;
}

/** The nginx recipe's `location /` in node:http: Host kept, X-Forwarded-Proto set, X-Forwarded-For appended. */
async function startProxy(upstream: string, opts: { forwardedFor?: boolean } = {}): Promise<Proxy> {
  const target = new URL(upstream);
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const headers = { ...req.headers };
    const before = req.headers["x-forwarded-for"];
    // A proxy set up without the recipe's X-Forwarded-For line passes on whatever the client sent.
    if (opts.forwardedFor !== false) headers["x-forwarded-for"] = before ? `${before}, ${req.socket.remoteAddress}` : req.socket.remoteAddress;
    headers["x-forwarded-proto"] = "https";
    const out = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    out.once("error", () => res.destroy());
    req.pipe(out);
  };
  const listen = (host: string) =>
    new Promise<http.Server>((resolve) => {
      const s = http.createServer(handler);
      s.listen(0, host, () => resolve(s));
    });
  const servers = [await listen(outside ?? "127.0.0.1"), await listen("127.0.0.1")];
  const at = (s: http.Server) => {
    const a = s.address() as AddressInfo;
    return `http://${a.address}:${a.port}`;
  };
  return {
    remote: at(servers[0]!),
    local: at(servers[1]!),
    close: () => Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r())))).then(() => undefined),
  };
}

/** A request as a browser or agent on the public name sends it: Host is the public one. */
function via(base: string, p: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
  return new Promise<{ status: number; text: string; headers: http.IncomingHttpHeaders }>((resolve, reject) => {
    const u = new URL(base);
    const req = http.request(
      { host: u.hostname, port: u.port, method: init.method ?? "GET", path: p, headers: { host: new URL(PUBLIC).host, ...init.headers } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }));
      },
    );
    req.once("error", reject);
    req.end(init.body);
  });
}

const servers: TestServer[] = [];
const proxies: Proxy[] = [];
afterAll(async () => {
  await Promise.all(proxies.map((p) => p.close()));
  await Promise.all(servers.map((s) => s.stop()));
  await removeTestBoxes();
});

describe.skipIf(!outside)("behind a loopback proxy (HOLM_PUBLIC_URL set)", () => {
  it("never acts as the server for a caller without credentials in open mode", async () => {
    const open = await startServer({ HOLM_SERVER_TOKEN: "", HOLM_PUBLIC_URL: PUBLIC });
    servers.push(open);
    const proxy = await startProxy(open.base);
    proxies.push(proxy);
    // A stranger on the internet, even one who claims to be loopback in X-Forwarded-For.
    for (const extra of [{}, { "x-forwarded-for": "127.0.0.1" }] as Record<string, string>[]) {
      const list = await via(proxy.remote, "/v1/boxes", { headers: extra });
      expect(list.status, list.text).toBe(401);
      expect(JSON.parse(list.text)).toMatchObject({ code: "unauthorized", retryable: false });
      const put = await via(proxy.remote, "/v1/secrets/x", { method: "PUT", headers: { ...extra, "content-type": "application/json" }, body: '{"value":"v"}' });
      expect(put.status, put.text).toBe(401);
    }
    // Nor through the proxy from this machine: a public URL means callers come through a proxy.
    expect((await via(proxy.local, "/v1/boxes")).status).toBe(401);
    // Health stays open, and the log names no `open` actor.
    expect((await via(proxy.remote, "/v1/health")).status).toBe(200);
    expect(open.logs()).not.toMatch(/"actor":"open"/);
  });

  it("counts failed log-ins per client address, so a stranger cannot lock the owner out", async () => {
    const s = await startServer({ HOLM_PUBLIC_URL: PUBLIC });
    servers.push(s);
    const proxy = await startProxy(s.base);
    proxies.push(proxy);
    await consoleClient(s).signUp("owner@example.com", "O");
    const login = (base: string, email: string, password: string) =>
      via(base, "/login", {
        method: "POST",
        headers: { origin: PUBLIC, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ email, password, next: "/" }).toString(),
      });
    // 21 guesses from the internet, each at another account (the per-account limit is 8).
    const guesses = [];
    for (let i = 0; i < 21; i++) guesses.push(await login(proxy.remote, `nobody${i}@example.com`, "wrong password!!"));
    expect(guesses[0]!.text).toContain("the email or password is not right");
    expect(guesses[20]!.text).toContain("too many failed attempts");
    // The owner, at another address, still gets in.
    const owner = await login(proxy.local, "owner@example.com", "correct horse battery");
    expect(owner.status, /role="alert"[^>]*>([^<]*)/.exec(owner.text)?.[1] ?? owner.text.slice(0, 300)).toBe(302);
    expect(String(owner.headers["set-cookie"])).toMatch(/^holm_session=/);
  });
});

describe.skipIf(!outside)("behind a loopback proxy that sends no X-Forwarded-For", () => {
  it("a stranger cannot make the first account (which administers the server); the operator at the machine still can", async () => {
    const s = await startServer({ HOLM_SERVER_TOKEN: "", HOLM_PUBLIC_URL: PUBLIC });
    servers.push(s);
    const proxy = await startProxy(s.base, { forwardedFor: false });
    proxies.push(proxy);
    const form = new URLSearchParams({ name: "Mallory", email: "mallory@example.com", password: "correct horse battery", confirm: "correct horse battery", workspace: "Mine" }).toString();
    const signUp = (base: string, host?: string) =>
      via(base, "/signup", { method: "POST", headers: { origin: host ? `http://${host}` : PUBLIC, "content-type": "application/x-www-form-urlencoded", ...(host ? { host } : {}) }, body: form });
    // Every request reaches holm from the proxy's loopback address, X-Forwarded-For or not.
    for (const extra of [{}, { "x-forwarded-for": "127.0.0.1" }] as Record<string, string>[]) {
      const page = await via(proxy.remote, "/signup", { headers: extra });
      expect(page.text).not.toContain('name="password"');
    }
    const stranger = await signUp(proxy.remote);
    expect(String(stranger.headers["set-cookie"] ?? "")).not.toMatch(/holm_session=/);
    expect(stranger.text.replace(/<[^>]+>/g, " ")).toContain("the first account administers this server");
    // At the machine (its loopback address, or an SSH tunnel to it): the first account is made.
    const owner = await signUp(s.base, new URL(s.base).host);
    expect(owner.status, owner.text.slice(0, 300)).toBe(302);
    expect(String(owner.headers["set-cookie"])).toMatch(/^holm_session=/);
  });
});

describe.skipIf(!outside)("CDP addresses behind the proxy", () => {
  it("start with HOLM_PUBLIC_URL, whatever X-Forwarded-Host the client sends", async () => {
    const s = await startServer({ HOLM_PUBLIC_URL: PUBLIC });
    servers.push(s);
    const proxy = await startProxy(s.base);
    proxies.push(proxy);
    const made = await s.api("/v1/boxes", { method: "POST", json: {} });
    const box = await json(made);
    expect(box.state, JSON.stringify(box)).toBe("ready");
    const auth = { authorization: `Bearer ${s.token}` };
    const evil = { "x-forwarded-host": "evil.test" };
    // Through the proxy (which passes a client's X-Forwarded-Host on), and straight on loopback.
    const minted = [
      JSON.parse((await via(proxy.remote, `/v1/boxes/${box.id}/cdp`, { method: "POST", headers: { ...auth, ...evil } })).text),
      await json(await fetch(`${s.base}/v1/boxes/${box.id}/cdp`, { method: "POST", headers: { ...auth, ...evil } })),
    ];
    for (const m of minted) {
      expect(m.url, JSON.stringify(m)).toMatch(/^https:\/\/holm\.example\.test\/v1\/cdp\/[^/]+$/);
      expect(m.ws_url, JSON.stringify(m)).toMatch(/^wss:\/\/holm\.example\.test\/v1\/cdp\/[^/]+\/devtools\/browser\//);
    }
    const token = /\/v1\/cdp\/([^/]+)$/.exec(minted[0].url)![1]!;
    const version = JSON.parse((await via(proxy.remote, `/v1/cdp/${token}/json/version`, { headers: evil })).text);
    expect(version.webSocketDebuggerUrl).toMatch(/^wss:\/\/holm\.example\.test\/v1\/cdp\//);
    const shown = JSON.parse((await via(proxy.remote, `/v1/boxes/${box.id}`, { headers: { ...auth, ...evil } })).text);
    expect(shown.devtools_url, JSON.stringify(shown)).toMatch(/^https:\/\/holm\.example\.test\/v1\/cdp\//);
  });
});

describe("without HOLM_PUBLIC_URL", () => {
  it("believes no X-Forwarded-For: a loopback peer stays one, whatever it claims", async () => {
    const open = await startServer({ HOLM_SERVER_TOKEN: "" });
    servers.push(open);
    const res = await fetch(`${open.base}/v1/boxes`, { headers: { "x-forwarded-for": "203.0.113.9" } });
    expect(res.status).toBe(200);
    expect((await json(res)).boxes).toEqual([]);
  });
});
