import { describe, expect, it } from "vitest";
import net from "node:net";
import path from "node:path";
import { v1Routes } from "../../app/routes";
import { raw } from "../support/http";
import { ROOT, type TestServer, execIn, json } from "../support/server";
import { serverWithOneBox } from "../support/one-box";

// Bad input answers the seed's 400 `bad_request` ({code, message, retryable}) at once: never a
// hang, a 500, a 422, an HTML page or an empty body, and never an effect. One box for all.

let server: TestServer;
let box: any;

serverWithOneBox((s, b) => {
  server = s;
  box = b;
});

/** A /v1 call that must answer within `ms` (a hang fails the test, not its timeout). */
async function call(path: string, init: RequestInit & { json?: unknown } = {}, ms = 20_000) {
  const t0 = Date.now();
  const res = await server.api(path, { ...init, signal: AbortSignal.timeout(ms) });
  const text = await res.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, body, ms: Date.now() - t0 };
}

const badRequest = (r: { status: number; body: any }, what: string) => {
  expect(r.status, `${what}: ${JSON.stringify(r.body)}`).toBe(400);
  expect(r.body, what).toMatchObject({ code: "bad_request", retryable: false });
  expect(typeof r.body.message).toBe("string");
};

describe("writes under /proc, /sys and /dev", () => {
  it("PUT …/files, page/pdf and a batch's write_file refuse them with 400 at once; the agent goes on", async () => {
    const b64 = Buffer.from("x").toString("base64");
    for (const p of ["/proc/nope/x", "/sys/nope/x", "/dev/nope/x", "/proc/x"]) {
      const r = await call(`/v1/boxes/${box.id}/files`, { method: "PUT", json: { path: p, contents_base64: b64 } });
      badRequest(r, p);
      expect(r.ms).toBeLessThan(5000);
    }
    // Through a symlink in /tmp, and relative to $HOME: the real path decides.
    expect((await execIn(box.id, ["ln", "-s", "/proc", "/tmp/procfs"])).code).toBe(0);
    badRequest(await call(`/v1/boxes/${box.id}/files`, { method: "PUT", json: { path: "/tmp/procfs/nope/x", contents_base64: b64 } }), "symlink");
    badRequest(await call(`/v1/boxes/${box.id}/files`, { method: "PUT", json: { path: "../../../../../proc/nope/x", contents_base64: b64 } }), "relative");
    badRequest(await call(`/v1/boxes/${box.id}/page/pdf`, { method: "POST", json: { path: "/proc/p/q.pdf" } }), "pdf");
    const batch = await call(`/v1/boxes/${box.id}/screens/0/actions`, {
      method: "POST",
      json: { actions: [{ type: "write_file", what: { path: "/proc/nope/y", contents_base64: b64 } }] },
    });
    expect(JSON.stringify(batch.body)).toContain('"code":"bad_request"');
    // Parents are still made, level by level, and the agent answers at once.
    const ok = await call(`/v1/boxes/${box.id}/files`, { method: "PUT", json: { path: "/tmp/a/b/c/d.txt", contents_base64: b64 } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.ms).toBeLessThan(5000);
    expect((await execIn(box.id, ["cat", "/tmp/a/b/c/d.txt"])).out).toBe("x");
  });
});

describe("routes that take no body", () => {
  it("refuse any key, naming it, and accept no body or {}", async () => {
    const s = `/v1/boxes/${box.id}/screens/0`;
    const cases: [string, string, unknown][] = [
      ["POST", `/v1/boxes/${box.id}/cdp`, { ttl_secs: 60 }],
      ["POST", `/v1/boxes/${box.id}/pause`, { extra: 1 }],
      ["POST", `/v1/boxes/${box.id}/resume`, { bogus: 1 }],
      ["POST", `/v1/boxes/${box.id}/stop`, { keep_files: false }],
      ["POST", `${s}/windows/0x1/focus`, { bogus: 1 }],
      ["DELETE", `${s}/windows/0x1`, { bogus: 1 }],
      ["DELETE", `${s}/takeover`, { bogus: 1 }],
      ["DELETE", `${s}/recording`, { bogus: 1 }],
      ["POST", "/v1/jobs/reap", { bogus: 1 }],
      ["DELETE", `/v1/boxes/${box.id}`, { bogus: 1 }],
      ["DELETE", "/v1/states/nope", { bogus: 1 }],
      ["DELETE", "/v1/secrets/nope", { bogus: 1 }],
    ];
    for (const [method, path, body] of cases) {
      const headers = { "x-holm-confirm-delete": "true" };
      const r = await call(path, { method, json: body, headers });
      badRequest(r, `${method} ${path}`);
      expect(r.body.message, path).toContain(`unknown key "${Object.keys(body as object)[0]}"`);
    }
    // The box was neither paused, stopped nor removed.
    expect((await json(await server.api(`/v1/boxes/${box.id}`))).state).toBe("ready");
    // cdp's ttl belongs in the query; with no body or {}, these answer as before.
    expect((await call(`/v1/boxes/${box.id}/cdp?ttl_secs=60`, { method: "POST" })).status).toBe(200);
    expect((await call(`/v1/boxes/${box.id}/cdp`, { method: "POST", json: {} })).status).toBe(200);
    expect((await call("/v1/jobs/reap", { method: "POST", json: {} })).status).toBe(200);
  });
});

describe("values that cannot be used", () => {
  it("an apt package name ending in - (apt's 'remove') is 400 naming the field, before any image build", async () => {
    const before = (await call("/v1/runtimes/docker/images")).body;
    for (const [spec, field] of [
      [{ desktop: { packages: ["x11vnc-"] } }, "spec.desktop.packages.0"],
      [{ desktop: { packages: ["jq", "xvfb-"] } }, "spec.desktop.packages.1"],
      [{ apps: { vnc: { packages: ["x11vnc-"], argv: ["true"] } } }, "spec.apps.vnc.packages.0"],
    ] as const) {
      for (const path of ["/v1/runtimes/docker/image", "/v1/boxes"]) {
        const r = await call(path, { method: "POST", json: { spec } });
        badRequest(r, `${path} ${JSON.stringify(spec)}`);
        expect(r.body.message).toContain(field);
      }
    }
    // Nothing was built or counted.
    expect((await call("/v1/runtimes/docker/images")).body).toEqual(before);
  });

  it("exec refuses a NUL byte in argv, or an empty program, with 400", async () => {
    badRequest(await call(`/v1/boxes/${box.id}/exec`, { method: "POST", json: { argv: ["a\u0000b"] } }), "argv");
    badRequest(await call(`/v1/boxes/${box.id}/exec`, { method: "POST", json: { argv: ["echo", "x\u0000"] } }), "argv[1]");
    // No program to run is the caller's mistake (was: 422 `failed` in Node's words).
    badRequest(await call(`/v1/boxes/${box.id}/exec`, { method: "POST", json: { argv: [""] } }), "argv[0] empty");
    badRequest(await call(`/v1/boxes/${box.id}/exec`, { method: "POST", json: { argv: ["", "x"] } }), "argv[0] empty, with arguments");
    badRequest(
      await call(`/v1/boxes/${box.id}/screens/0/actions`, { method: "POST", json: { actions: [{ type: "exec", what: { argv: [""] } }] } }),
      "a batch's exec with argv[0] empty",
    );
    // An empty argument after the program is an argument like any other.
    const ok = await call(`/v1/boxes/${box.id}/exec`, { method: "POST", json: { argv: ["printf", "[%s]", ""] } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.stdout).toBe("[]");
  });

  it("page/element refuses an empty selector or a blank query with 400, and clicks nothing", async () => {
    const html = "<h1 onclick='window.hit=(window.hit||0)+1'>Heading</h1><button>Go</button>";
    const open = await call(`/v1/boxes/${box.id}/screens/0/actions`, {
      method: "POST",
      json: { actions: [{ type: "open_url", url: `data:text/html,${encodeURIComponent(html)}` }] },
    });
    expect(open.status, JSON.stringify(open.body)).toBe(200);
    for (const query of ["text=", "css=", "xpath=", "css=   ", "   "]) {
      badRequest(await call(`/v1/boxes/${box.id}/page/element`, { method: "POST", json: { op: "click", query } }), JSON.stringify(query));
    }
    const hit = await call(`/v1/boxes/${box.id}/page/evaluate`, { method: "POST", json: { expression: "window.hit ?? 0" } });
    expect(hit.body.value, JSON.stringify(hit.body)).toBe(0);
  });
});

describe("query keys", () => {
  // Not checked here: the CDP relay passes its query on to Chromium's /json endpoints
  // (/json/new?url), and a plain GET of the DevTools or viewer socket path is 401 or 400 whatever
  // else it carries (the viewer socket's query is its upgrade's: ticket and mode).
  let hook = "";
  const RELAYED = new Set(["v1/cdp/:token/json", "v1/cdp/:token/json/*", "v1/cdp/:token/devtools/*", "v1/boxes/:id/screens/:screen/viewer/socket", "v1/*"]);
  const concrete = (p: string) =>
    `/${p}`
      .replace("/v1/runtimes/:name", "/v1/runtimes/docker")
      .replace(":id", p.startsWith("v1/webhooks") ? hook : box.id)
      .replace(":screen", "0")
      .replace(":digest", "0".repeat(16))
      .replace(":hash", "0".repeat(64))
      .replace(":rid", "rec_0000000000000000");

  it("every GET route refuses a key it does not take with 400 naming it (a typo is never ignored), from the router's own list", async () => {
    const gets: string[] = [];
    for (const r of v1Routes) {
      if (RELAYED.has(r.path!)) continue;
      const mod = await import(path.join(ROOT, "app", r.file));
      if ((mod.loader?.methods ?? []).includes("GET")) gets.push(r.path!);
    }
    expect(gets.length).toBeGreaterThan(30);
    // A real webhook (disabled, and no event it takes happens here: nothing is sent).
    hook = (await call("/v1/webhooks", { method: "POST", json: { url: "http://8.8.8.8/x", events: ["image.removed"], enabled: false } })).body.id;
    // The keys a route needs, so that the unknown one is what it refuses.
    const needs: Record<string, string> = { "v1/boxes/:id/files": "path=/tmp&", "v1/boxes/:id/files/list": "path=/tmp&", "v1/boxes/:id/files/glob": "pattern=*&", "v1/boxes/:id/page/find": "q=x&" };
    const wrong: string[] = [];
    // The exception: a probe's liveness answer ignores what it does not know (a load balancer's
    // cache-buster), below.
    for (const p of gets.filter((g) => g !== "v1/health")) {
      const r = await call(`${concrete(p)}?${needs[p] ?? ""}bogus=1`);
      if (r.status !== 400 || r.body?.code !== "bad_request" || !String(r.body.message).includes('unknown key "bogus" in the query')) wrong.push(`${p}: ${r.status} ${JSON.stringify(r.body).slice(0, 120)}`);
    }
    expect(wrong).toEqual([]);
  });

  it("GET /v1/health answers {ok: true} whatever else its query carries (a probe's ?_=123); ?ready=1 still asks for readiness", async () => {
    for (const q of ["?_=1", "?bogus=1", "?_=1&_=2", "?ready=0&_=1"]) {
      const r = await fetch(`${server.base}/v1/health${q}`);
      expect(r.status, q).toBe(200);
      expect(await r.json(), q).toEqual({ ok: true, service: "holm-server" });
    }
    const ready = await fetch(`${server.base}/v1/health?ready=1&_=1`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ ok: true, ready: true });
  });

  it("GET /v1/boxes?label=env=ci is 400, not every box (a cleanup script would remove them all); no query answers as before", async () => {
    const r = await call("/v1/boxes?label=env%3Dci");
    badRequest(r, "label");
    expect(r.body.message).toContain('unknown key "label"');
    expect((await call("/v1/boxes")).body.boxes.map((b: any) => b.id)).toContain(box.id);
    expect((await call("/v1/boxes?")).status).toBe(200);
    expect((await call(`/v1/boxes/${box.id}?x=1`)).status).toBe(400);
    expect((await call(`/v1/boxes/${box.id}`)).body.id).toBe(box.id);
    // The queries routes do take still work: readiness, a trace page, a frame's `have`.
    expect((await fetch(`${server.base}/v1/health?ready=1`)).status).toBe(200);
    expect((await call(`/v1/boxes/${box.id}/trace?limit=1`)).status).toBe(200);
    expect((await call(`/v1/boxes/${box.id}/screens/0/frame?have=${"0".repeat(64)}`)).status).toBe(200);
  });
});

describe("requests that do not parse", () => {
  it("a malformed percent-escape in a /v1 path answers 400 in the /v1 shape", async () => {
    for (const p of ["/v1/boxes/%FF/trace", "/v1/boxes/%E0%A4%A", "/v1/boxes/%zz"]) {
      const r = await raw(server.base, "GET", p, { authorization: `Bearer ${server.token}` });
      expect(r.status, `${p}: ${r.text}`).toBe(400);
      expect(r.headers["content-type"]).toContain("application/json");
      expect(JSON.parse(r.text)).toMatchObject({ code: "bad_request", retryable: false });
    }
  });

  it("a 20 kB query string answers 431 with the /v1 error body", async () => {
    const url = new URL(server.base);
    const text = await new Promise<string>((resolve, reject) => {
      const sock = net.connect(Number(url.port), url.hostname, () => {
        sock.write(`GET /v1/boxes/${box.id}/page/find?q=${"a".repeat(20_000)} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${server.token}\r\n\r\n`);
      });
      let out = "";
      sock.setEncoding("utf8");
      sock.on("data", (d) => (out += d));
      sock.on("end", () => resolve(out));
      sock.on("error", (e) => (out ? resolve(out) : reject(e)));
      sock.setTimeout(10_000, () => sock.destroy(new Error(`no end: ${out}`)));
    });
    expect(text).toMatch(/^HTTP\/1\.1 431 /);
    const body = text.slice(text.indexOf("\r\n\r\n") + 4);
    expect(text.toLowerCase()).toContain("content-type: application/json");
    expect(JSON.parse(body)).toMatchObject({ code: "bad_request", retryable: false });
    // The server goes on serving.
    expect((await fetch(`${server.base}/v1/health`)).status).toBe(200);
  });
});
