import { spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { io } from "socket.io-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleClient } from "../support/console";
import { raw, upgrade } from "../support/http";
import { freePortOn, outsideAddress } from "../support/outside";
import { ROOT, type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// The HTTP edge as a web page, a rebinding attacker and a signed-in person would try it, against
// a server in open mode (no HOLM_SERVER_TOKEN, the default): what a browser can make the server
// do, and what /v1 serves before and after the first account exists.

let server: TestServer;
let c: ReturnType<typeof consoleClient>;
let host: string;

beforeAll(async () => {
  server = await startServer({ HOLM_SERVER_TOKEN: "" });
  c = consoleClient(server);
  host = new URL(server.base).host;
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

const EVIL = "http://evil.example";

async function boxIds(auth: Record<string, string> = {}): Promise<string[]> {
  const res = await fetch(`${server.base}/v1/boxes`, { headers: auth });
  expect(res.status).toBe(200);
  return (await json(res)).boxes.map((b: { id: string }) => b.id);
}

function expectNoCors(headers: Headers | Record<string, unknown>, where: string) {
  const names = headers instanceof Headers ? [...headers.keys()] : Object.keys(headers);
  expect(names.filter((n) => n.toLowerCase().startsWith("access-control-")), where).toEqual([]);
}

describe("open mode, before the first account", () => {
  it("runs the README's Try it as written, and again when it is pasted a second time", () => {
    const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
    const block = /## Try it\s+```bash\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toContain("BASE=http://127.0.0.1:8080\n");
    const script = block!.replace("BASE=http://127.0.0.1:8080", `BASE=${server.base}`);
    // Twice: a fixed idempotency key would answer the second create with the first (removed)
    // box, and its next curl would fail on 410.
    const ids: string[] = [];
    for (const time of ["first", "second"]) {
      const run = spawnSync("bash", ["-euo", "pipefail", "-c", `${script}\necho "box=$BOX"`], { encoding: "utf8", timeout: 170_000 });
      expect(run.status, `${time} run: ${run.stdout}\n${run.stderr}`).toBe(0);
      expect(run.stdout).toMatch(/"state":"gone"/);
      ids.push(/box=(\S+)/.exec(run.stdout)![1]!);
    }
    expect(ids[1]).not.toBe(ids[0]);
  });

  it("refuses a body that is not application/json with 400 bad_request (the seed has no 415 code), so a page's simple request launches nothing", async () => {
    const before = await boxIds();
    const simple: [string, string][] = [
      ["text/plain", "{}"],
      ["text/plain;charset=UTF-8", '{"spec": {}}'],
      ["application/x-www-form-urlencoded", "a=b"],
      ["multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=a\r\n\r\nb\r\n--x--\r\n"],
      ["application/jsonp", "{}"],
    ];
    for (const [type, body] of simple) {
      for (const p of ["/v1/boxes", "/v1/boxes/box_0123456789abcdef0123456789abcdef/exec"]) {
        const res = await fetch(`${server.base}${p}`, { method: "POST", headers: { "content-type": type }, body });
        expect(res.status, `${type} ${p}`).toBe(400);
        const out = await json(res);
        expect(out, `${type} ${p}`).toMatchObject({ code: "bad_request", retryable: false });
        expect(out.message).toContain("content-type: application/json");
      }
    }
    // A body with no content type at all is refused too; one with JSON's type goes on to the route.
    const none = await raw(server.base, "POST", "/v1/boxes", { "content-length": "2" }, "{}");
    expect(none.status).toBe(400);
    expect(JSON.parse(none.text)).toMatchObject({ code: "bad_request", message: expect.stringContaining("no content-type") });
    // The unread body's connection is closed, and the answer says so: a keep-alive client that
    // was not told sent its next request on the closing socket ("other side closed" in a CI run).
    expect(none.headers.connection).toBe("close");
    const kept = await raw(server.base, "POST", "/v1/boxes", { "content-type": "text/plain", "content-length": "2", connection: "keep-alive" }, "{}");
    expect(kept.status).toBe(400);
    expect(kept.headers.connection).toBe("close");
    const typed = await fetch(`${server.base}/v1/boxes`, { method: "POST", headers: { "content-type": "application/json; charset=utf-8" }, body: '{"nope":1}' });
    expect(typed.status).toBe(400);
    expect((await json(typed)).message).toContain('unknown key "nope"');
    expect(await boxIds()).toEqual(before);
  });

  it("refuses a foreign Host (DNS rebinding) on /v1, the console, socket.io and socket upgrades with 421", async () => {
    const port = new URL(server.base).port;
    for (const bad of ["rebind.example", `rebind.example:${port}`, `127.0.0.1:${Number(port) + 1}`, `localhost.evil.example:${port}`, `127.0.0.1:${port}@evil.example`]) {
      for (const p of ["/v1/boxes", "/v1/health", "/", "/login", "/favicon.ico"]) {
        const res = await raw(server.base, "GET", p, { host: bad });
        expect(res.status, `${bad} ${p}`).toBe(421);
        expect(JSON.parse(res.text), `${bad} ${p}`).toMatchObject({ code: "misdirected", retryable: false });
      }
      // socket.io answers its own refusals (engine.io's 403 with code 4), before any page.
      const polled = await raw(server.base, "GET", "/socket.io/?EIO=4&transport=polling", { host: bad });
      expect(polled.status, bad).toBe(403);
      expect(polled.text).toContain("does not answer to Host");
      const post = await raw(server.base, "POST", "/v1/boxes", { host: bad, "content-type": "application/json" }, "{}");
      expect(post.status, bad).toBe(421);
      expect(await upgrade(server.base, "/v1/boxes/box_0123456789abcdef0123456789abcdef/screens/0/viewer/socket?ticket=x", { host: bad }), bad).toBe(421);
      expect(await upgrade(server.base, "/socket.io/?EIO=4&transport=websocket", { host: bad }), bad).not.toBe(101);
      // Vite's HMR protocol is answered like any other in production (it hung unanswered, a file
      // descriptor each, for anyone who could reach the port).
      expect(await upgrade(server.base, "/anything", { host: bad, "sec-websocket-protocol": "vite-hmr" }), bad).toBe(421);
    }
    expect(await upgrade(server.base, "/anything", { "sec-websocket-protocol": "vite-hmr" })).toBe(404);
    // The names this server answers to: the listen address, and loopback names with its port.
    for (const good of [host, `localhost:${port}`, `LOCALHOST:${port}`, `127.0.0.1:${port}`]) {
      expect((await raw(server.base, "GET", "/v1/health", { host: good })).status, good).toBe(200);
    }
  });

  it("refuses a cross-site Origin, Origin: null and Sec-Fetch-Site cross-site or same-site on /v1 with 403", async () => {
    const before = await boxIds();
    const foreign: Record<string, string>[] = [
      { origin: EVIL },
      { origin: "null" },
      { origin: `http://127.0.0.1:${Number(new URL(server.base).port) + 1}` },
      // A name that resolves to loopback is still another origin.
      { origin: `http://127.0.0.1.nip.io:${new URL(server.base).port}` },
      { "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site" },
      { origin: server.base, "sec-fetch-site": "cross-site" },
    ];
    for (const headers of foreign) {
      const where = JSON.stringify(headers);
      const get = await fetch(`${server.base}/v1/boxes`, { headers });
      expect(get.status, where).toBe(403);
      expect(await json(get), where).toMatchObject({ code: "forbidden", retryable: false });
      const post = await fetch(`${server.base}/v1/boxes`, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: "{}" });
      expect(post.status, where).toBe(403);
      expectNoCors(post.headers, where);
    }
    expect(await boxIds()).toEqual(before);
    // The console's own origin, and tools that send no Origin, are served.
    expect((await fetch(`${server.base}/v1/boxes`, { headers: { origin: server.base, "sec-fetch-site": "same-origin" } })).status).toBe(200);
    expect((await fetch(`${server.base}/v1/boxes`, { headers: { "sec-fetch-site": "none" } })).status).toBe(200);
  });

  it("grants no CORS: preflights and answers carry no Access-Control-Allow-* header", async () => {
    for (const p of ["/v1/boxes", "/v1/health", "/v1/boxes/box_0123456789abcdef0123456789abcdef", "/", "/socket.io/?EIO=4&transport=polling"]) {
      for (const origin of [EVIL, server.base]) {
        const pre = await fetch(`${server.base}${p}`, {
          method: "OPTIONS",
          headers: { origin, "access-control-request-method": "DELETE", "access-control-request-headers": "content-type, x-holm-confirm-delete" },
        });
        expect(pre.status, `OPTIONS ${p} from ${origin}`).toBeGreaterThanOrEqual(400);
        expectNoCors(pre.headers, `OPTIONS ${p} from ${origin}`);
      }
      expectNoCors((await fetch(`${server.base}${p}`, { headers: { origin: server.base } })).headers, `GET ${p}`);
    }
  });

  it("says on every answer that it is never framed nor sniffed: pages (script policy), assets, /v1 (sandboxed, as data), refusals, 404s", async () => {
    const asset = fs.readdirSync(path.join(ROOT, "build/client/assets")).find((f) => f.endsWith(".js"));
    const answers: [string, Response][] = [];
    for (const p of ["/", "/login", "/keys", `/assets/${asset}`, "/favicon.ico", "/v1/health", "/v1/boxes", "/v1/openapi.json", "/v1/nope", "/nope"]) {
      answers.push([`GET ${p}`, await fetch(`${server.base}${p}`, { redirect: "manual" })]);
    }
    answers.push(["POST text/plain", await fetch(`${server.base}/v1/boxes`, { method: "POST", headers: { "content-type": "text/plain" }, body: "{}" })]);
    answers.push(["POST cross-site", await fetch(`${server.base}/v1/boxes`, { method: "POST", headers: { "content-type": "application/json", origin: EVIL }, body: "{}" })]);
    for (const [what, res] of answers) {
      await res.arrayBuffer();
      expect(res.headers.get("x-frame-options"), what).toBe("DENY");
      // /v1 answers data, never a page: were it ever a box's page, a browser would run nothing of it.
      const api = / \/v1\/|^POST /.test(what);
      // Anything else may be a page of the console: only scripts with the answer's nonce run there
      // (docs/decisions/0033; tests/e2e/csp.spec.ts shows it in a browser).
      const policy = res.headers.get("content-security-policy");
      if (api) expect(policy, what).toBe("sandbox; default-src 'none'; frame-ancestors 'none'");
      else expect(policy, what).toMatch(/^script-src 'nonce-[A-Za-z0-9+/]{22}==' 'strict-dynamic'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; /);
      expect(res.headers.get("x-content-type-options"), what).toBe("nosniff");
    }
  });

  // A second server on an address of this machine that is not loopback: peers there are not local.
  const outside = outsideAddress;

  it.skipIf(!outside)("serves /v1 only to loopback peers", async () => {
    const port = await freePortOn(outside!);
    const remote = await startServer({ HOLM_SERVER_TOKEN: "", HOLM_SERVER_ADDR: `${outside}:${port}` });
    try {
      for (const [method, p] of [["GET", "/v1/boxes"], ["POST", "/v1/jobs/reap"], ["GET", "/v1/events"]] as const) {
        const res = await fetch(`${remote.base}${p}`, { method });
        expect(res.status, `${method} ${p}`).toBe(401);
        const body = await json(res);
        expect(body.code).toBe("unauthorized");
        expect(body.message).toMatch(/loopback/);
      }
      expect((await fetch(`${remote.base}/v1/health`)).status).toBe(200);
    } finally {
      await remote.stop();
    }
  });
});

describe("after the first account", () => {
  let ada: Awaited<ReturnType<typeof c.signUp>>;
  let vic: Awaited<ReturnType<typeof c.signUp>>;
  let key: string;
  let box: string;

  beforeAll(async () => {
    ada = await c.signUp("ada@example.com", "Research");
    key = (await c.createKey(ada, "agent")).secret;
    const token = await c.inviteToken(ada, "vic@example.com", "viewer");
    vic = await c.signUp("vic@example.com", "", "correct horse battery", token);
    const res = await fetch(`${server.base}/v1/boxes`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: "{}",
    });
    const made = await json(res);
    expect(res.status, JSON.stringify(made)).toBe(200);
    box = made.id;
  });

  it("answers 401 to /v1 without a key or token, saying what to send", async () => {
    for (const [method, p] of [["GET", "/v1/boxes"], ["POST", "/v1/boxes"], ["GET", `/v1/boxes/${box}`], ["DELETE", `/v1/boxes/${box}`], ["POST", "/v1/jobs/reap"]] as const) {
      const res = await fetch(`${server.base}${p}`, { method, headers: { "x-holm-confirm-delete": "true" } });
      expect(res.status, `${method} ${p}`).toBe(401);
      const body = await json(res);
      expect(body.code).toBe("unauthorized");
      expect(body.message).toMatch(/holm_sk_/);
      expect(body.message).toMatch(/HOLM_SERVER_TOKEN/);
    }
    expect(await boxIds({ authorization: `Bearer ${key}` })).toContain(box);
  });

  it("a session cookie on /v1 acts as that person with their role, only with the CSRF header, recorded as them", async () => {
    const csrfOf = async (p: { cookie: string }) => c.csrfIn(await c.page(p, "/keys"));
    const adaCsrf = await csrfOf(ada);
    const vicCsrf = await csrfOf(vic);
    const v1 = (p: { cookie: string }, method: string, url: string, headers: Record<string, string> = {}) =>
      fetch(`${server.base}${url}`, { method, headers: { cookie: p.cookie, "x-holm-confirm-delete": "true", ...headers } });

    // Reading needs no CSRF header; it shows the person's own workspace.
    const list = await v1(vic, "GET", "/v1/boxes");
    expect(list.status).toBe(200);
    expect((await json(list)).boxes.map((b: { id: string }) => b.id)).toEqual([box]);

    // A change without the header, or with another session's, is refused before anything happens.
    const wrong: Record<string, string>[] = [{}, { "x-holm-csrf": "nope" }, { "x-holm-csrf": vicCsrf }];
    for (const headers of wrong) {
      const res = await v1(ada, "POST", `/v1/boxes/${box}/pause`, headers);
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(await json(res)).toMatchObject({ code: "forbidden" });
    }
    // The viewer's own page, with the right header, still has only the viewer's rights.
    for (const [method, url, body] of [
      ["DELETE", `/v1/boxes/${box}`, undefined],
      ["POST", `/v1/boxes/${box}/exec`, '{"argv": ["true"]}'],
      ["POST", "/v1/boxes", "{}"],
      ["POST", `/v1/boxes/${box}/screens/0/takeover`, "{}"],
    ] as const) {
      const res = await fetch(`${server.base}${url}`, {
        method,
        headers: { cookie: vic.cookie, "x-holm-csrf": vicCsrf, "x-holm-confirm-delete": "true", ...(body ? { "content-type": "application/json" } : {}) },
        body,
      });
      expect(res.status, `${method} ${url}`).toBe(409);
      const err = await json(res);
      expect(err.code).toBe("denied");
      expect(err.message).toMatch(/viewer/);
    }
    const still = await fetch(`${server.base}/v1/boxes/${box}`, { headers: { authorization: `Bearer ${key}` } });
    expect((await json(still)).state).toBe("ready");

    // The owner's page removes it, and the trace says who.
    const removed = await v1(ada, "DELETE", `/v1/boxes/${box}`, { "x-holm-csrf": adaCsrf, origin: server.base, "sec-fetch-site": "same-origin" });
    expect(removed.status).toBe(200);
    const trace = await json(await fetch(`${server.base}/v1/boxes/${box}/trace?limit=500`, { headers: { authorization: `Bearer ${key}` } }));
    const gone = trace.entries.find((e: { event: string }) => e.event === "gone");
    expect(gone).toMatchObject({ actor: "person", data: { reason: "removed", by: expect.stringMatching(/^user:/) } });
  });

  it("applies the /v1 and /mcp rules to the path as the router reads it: any case, percent-escapes, dot segments; absolute-form is refused", async () => {
    const cross = { cookie: ada.cookie, origin: EVIL, "sec-fetch-site": "cross-site" };
    // React Router matches without regard to case, after decoding and resolving "..": each of
    // these reaches a /v1 route, so each gets the /v1 rules (403 cross-site, not the answer).
    for (const p of ["/V1/boxes", "/%761/boxes", "/%56%31/boxes", "/V1/secrets", "/v1/Events", "/x/../V1/boxes", "/v1//boxes", "/MCP", "/Mcp/"]) {
      for (const method of ["GET", "POST"]) {
        const res = await raw(server.base, method, p, { ...cross, "content-type": "application/json" }, method === "POST" ? "{}" : undefined);
        expect(res.status, `${method} ${p}: ${res.text.slice(0, 200)}`).toBe(403);
        expect(JSON.parse(res.text), `${method} ${p}`).toMatchObject({ code: "forbidden", retryable: false });
      }
    }
    // A path that does not decode gets the /v1 error body, whatever its case.
    for (const p of ["/V1/boxes/%FF", "/%761/boxes/%FF"]) {
      const res = await raw(server.base, "GET", p, { cookie: ada.cookie });
      expect(res.status, p).toBe(400);
      expect(JSON.parse(res.text), p).toMatchObject({ code: "bad_request" });
    }
    // A request line in absolute-form names another server: 400 with the JSON body, not a 500 page.
    for (const target of ["http://evil.example/v1/boxes", `${server.base}/v1/boxes`, "*"]) {
      const answer = await new Promise<string>((resolve, reject) => {
        const s = net.connect(Number(new URL(server.base).port), "127.0.0.1");
        let text = "";
        s.on("data", (d) => (text += d));
        s.on("end", () => resolve(text));
        s.on("error", reject);
        s.write(`GET ${target} HTTP/1.1\r\nHost: ${host}\r\nCookie: ${ada.cookie}\r\nConnection: close\r\n\r\n`);
      });
      expect(answer.split("\r\n")[0], target).toMatch(/^HTTP\/1\.1 400 /);
      expect(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)), target).toMatchObject({ code: "bad_request" });
    }
    // The canonical path from the console's own origin is served as before.
    expect((await raw(server.base, "GET", "/v1/boxes", { cookie: ada.cookie, origin: server.base })).status).toBe(200);
  });

  it("socket.io refuses a cross-site Origin and a foreign Host; the console's own origin connects", async () => {
    const attempt = (headers: Record<string, string>) =>
      new Promise<string>((resolve) => {
        const socket = io(`${server.base}/boxes`, { transports: ["websocket"], extraHeaders: { cookie: ada.cookie, ...headers }, reconnection: false, timeout: 10_000 });
        socket.on("boxes", () => {
          socket.close();
          resolve("boxes");
        });
        socket.on("connect_error", (err) => {
          socket.close();
          resolve(`refused: ${err.message}`);
        });
      });
    for (const origin of [EVIL, "null", `http://127.0.0.1:${Number(new URL(server.base).port) + 1}`]) {
      expect(await attempt({ origin }), origin).toMatch(/^refused/);
    }
    expect(await attempt({ origin: server.base })).toBe("boxes");
    // Polling is checked the same way.
    const polled = await raw(server.base, "GET", "/socket.io/?EIO=4&transport=polling", { origin: EVIL, cookie: ada.cookie });
    expect(polled.status).toBe(403);
    expectNoCors(polled.headers, "socket.io polling");
  });
});
