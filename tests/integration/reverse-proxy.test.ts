import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { ROOT, type TestServer, freePort, json, removeTestBoxes, startServer } from "../support/server";
import { openViewer } from "../support/sockets";

// The Caddy and nginx recipes of docs/reverse-proxy.md, as written there (only the ports, the
// certificate and the upstream changed), each in turn in front of a real server with a real box:
// HTTPS answers, and the three kinds of WebSocket holm serves pass through: socket.io, the viewer
// (an RFB handshake) and the CDP proxy (a DevTools call). Each is skipped when its binary is not
// installed (Debian: nginx-light, caddy; scripts/setup.sh installs neither: on a host with
// systemd their packages start a server on port 80).

const installed = (cmd: string, arg: string) => spawnSync(cmd, [arg]).status === 0;
const nginx = installed("nginx", "-v");
const caddy = installed("caddy", "version");
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-proxy-"));
let server: TestServer;
let proxy: ChildProcess | undefined;
let base: string;
let boxId: string;

let ports: { https: number; http: number };

/** The document's block in a language (```nginx, ```caddy). */
function block(lang: string): string {
  const doc = fs.readFileSync(path.join(ROOT, "docs/reverse-proxy.md"), "utf8");
  return new RegExp("```" + lang + "\\n([\\s\\S]+?)```").exec(doc)![1]!;
}

/** The nginx block of the document, pointed at this test's ports, certificate and server. */
function nginxConfig(httpsPort: number, httpPort: number, upstream: string): string {
  const site = block("nginx")
    .replace("listen 80;", `listen 127.0.0.1:${httpPort};`)
    .replace("listen 443 ssl http2;", `listen 127.0.0.1:${httpsPort} ssl http2;`)
    .replaceAll("server_name holm.example.com;", "server_name localhost;")
    .replace(/ssl_certificate .*;/, `ssl_certificate ${dir}/cert.pem;`)
    .replace(/ssl_certificate_key .*;/, `ssl_certificate_key ${dir}/key.pem;`)
    .replace("http://127.0.0.1:8080", upstream);
  expect(site).not.toContain("example.com");
  // What /etc/nginx/nginx.conf gives a conf.d file, kept inside this test's directory.
  return `daemon off; pid ${dir}/nginx.pid; error_log ${dir}/error.log; user root;
events {}
http { access_log off; client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy;
${site}
}`;
}

/** Caddy's block, for https://localhost:PORT with its own local CA, no admin API, state in `dir`. */
function caddyConfig(httpsPort: number, httpPort: number, upstream: string): string {
  const site = block("caddy").replace("holm.example.com {", `https://localhost:${httpsPort} {`).replace("reverse_proxy 127.0.0.1:8080", `reverse_proxy ${upstream.replace("http://", "")}`);
  expect(site).not.toContain("example.com");
  return `{\n\tadmin off\n\tskip_install_trust\n\tlocal_certs\n\thttp_port ${httpPort}\n\thttps_port ${httpsPort}\n\tstorage file_system ${dir}/caddy\n}\n${site}`;
}

async function startProxy(kind: "nginx" | "caddy", upstream = server.base, edit = (conf: string) => conf): Promise<void> {
  let child: ChildProcess;
  if (kind === "nginx") {
    fs.writeFileSync(`${dir}/nginx.conf`, edit(nginxConfig(ports.https, ports.http, upstream)));
    const checked = spawnSync("nginx", ["-t", "-p", dir, "-c", `${dir}/nginx.conf`], { encoding: "utf8" });
    expect(checked.status, checked.stderr).toBe(0);
    child = spawn("nginx", ["-p", dir, "-c", `${dir}/nginx.conf`], { stdio: ["ignore", "ignore", "pipe"] });
  } else {
    fs.writeFileSync(`${dir}/Caddyfile`, edit(caddyConfig(ports.https, ports.http, upstream)));
    const home = { ...process.env, HOME: dir, XDG_DATA_HOME: `${dir}/data`, XDG_CONFIG_HOME: `${dir}/config` };
    const checked = spawnSync("caddy", ["validate", "--config", `${dir}/Caddyfile`, "--adapter", "caddyfile"], { encoding: "utf8", env: home });
    expect(checked.status, checked.stderr).toBe(0);
    child = spawn("caddy", ["run", "--config", `${dir}/Caddyfile`, "--adapter", "caddyfile"], { stdio: ["ignore", "ignore", "pipe"], env: home });
  }
  proxy = child;
  let stderr = "";
  child.stderr!.on("data", (d) => (stderr += d));
  for (let i = 0; ; i++) {
    let why: unknown;
    try {
      const res = await fetch(`${base}/v1/health`);
      // 421: holm answered through it, refusing a Host other than HOLM_PUBLIC_URL's (on another name).
      if (res.ok || res.status === 421) return;
      why = `${res.status} ${await res.text()}`;
    } catch (err) {
      why = (err as Error).cause ?? err;
    }
    if (i > 100 || child.exitCode !== null) throw new Error(`${kind} did not answer (${String(why)}; exit ${child.exitCode}): ${stderr.slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function stopProxy(): Promise<void> {
  const child = proxy;
  proxy = undefined;
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill(child.spawnargs[0] === "nginx" ? "SIGQUIT" : "SIGTERM");
  await exited;
}

beforeAll(async () => {
  if (!nginx && !caddy) return;
  ports = { https: await freePort(), http: await freePort() };
  base = `https://localhost:${ports.https}`;
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=localhost", "-keyout", `${dir}/key.pem`, "-out", `${dir}/cert.pem`], { stdio: "ignore" });
  server = await startServer({ HOLM_PUBLIC_URL: base });
  // This file's requests trust the proxies' test certificates (the file runs in a worker of its own).
  process.env.NODE_TLS_REJECT_UNAUTHORIZED = "0";
  const box = await json(await server.api("/v1/boxes", { method: "POST", json: { spec: { desktop: { features: [] } } } }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  boxId = box.id;
}, 120_000);

afterAll(async () => {
  await stopProxy();
  await server?.stop();
  await removeTestBoxes();
  fs.rmSync(dir, { recursive: true, force: true });
});

const viaProxy = (p: string, init: RequestInit = {}) =>
  fetch(`${base}${p}`, { ...init, headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json", ...init.headers } });

describe.each([
  ["caddy", caddy],
  ["nginx", nginx],
] as const)("docs/reverse-proxy.md's %s in front of holm", (kind, present) => {
  beforeAll(() => (present ? startProxy(kind) : undefined), 30_000);
  afterAll(stopProxy);

  it.skipIf(!present)("answers /v1 over HTTPS with the public URL in what it hands out", async () => {
    const box = await json(await viaProxy(`/v1/boxes/${boxId}`));
    expect(box.viewer_url.startsWith(`${base}/`)).toBe(true);
  });

  it.skipIf(!present)("passes socket.io's WebSocket", async () => {
    const ws = new WebSocket(`${base.replace("https", "wss")}/socket.io/?EIO=4&transport=websocket`);
    const first = await new Promise<string>((resolve, reject) => {
      ws.once("message", (d) => resolve(d.toString()));
      ws.once("error", reject);
    });
    ws.close();
    // engine.io's open packet: "0" and the session's parameters.
    expect(first).toMatch(/^0\{"sid":/);
  });

  it.skipIf(!present)("passes the viewer socket: an RFB handshake with the box's screen", async () => {
    const t = await json(await viaProxy(`/v1/boxes/${boxId}/screens/0/viewer/ticket`, { method: "POST", body: "{}" }));
    expect(t.view_socket.startsWith(`${base.replace("https", "wss")}/`)).toBe(true);
    const viewer = await openViewer(t.view_socket);
    expect(typeof viewer, `the upgrade answered ${String(viewer)}`).toBe("object");
    if (typeof viewer === "number") return;
    expect(await viewer.alive()).toBe(true);
    viewer.close();
  });

  it.skipIf(!present)("passes the CDP proxy: /json/version and a DevTools call over its WebSocket", async () => {
    const cdp = await json(await viaProxy(`/v1/boxes/${boxId}/cdp`, { method: "POST" }));
    expect(cdp.url.startsWith(`${base}/v1/cdp/`)).toBe(true);
    const version = await json(await fetch(`${cdp.url}/json/version`));
    expect(version.Browser).toMatch(/Chrom/);
    const ws = new WebSocket(cdp.ws_url);
    await new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    ws.send(JSON.stringify({ id: 1, method: "Browser.getVersion" }));
    const answer = await new Promise<any>((resolve) => ws.once("message", (d) => resolve(JSON.parse(d.toString()))));
    ws.close();
    expect(answer).toMatchObject({ id: 1, result: { product: expect.stringMatching(/Chrom/) } });
  });
});

// A proxy set up without the recipe's X-Forwarded-For line makes every client a loopback peer of
// holm's; with HOLM_PUBLIC_URL on a public name, such a peer makes the first account (which
// administers the server) only when it is the operator at the machine. The Host header is the
// client's to choose, and nginx passes it on ($http_host) to its only server on the port.
describe("docs/reverse-proxy.md's nginx without its X-Forwarded-For line, before anyone signed up", () => {
  it.skipIf(!nginx)("a stranger who sends a loopback Host cannot make the first account", async () => {
    const fresh = await startServer({ HOLM_SERVER_TOKEN: "", HOLM_PUBLIC_URL: "https://holm.example.test" });
    try {
      await startProxy("nginx", fresh.base, (conf) => conf.replace(/\n\s*proxy_set_header X-Forwarded-For .*;/, ""));
      const form = new URLSearchParams({ name: "Mallory", email: "mallory@example.com", password: "correct horse battery", confirm: "correct horse battery", workspace: "Mine" }).toString();
      // holm's own address (127.0.0.1:8080 in the recipe), which it answers to besides the public name.
      const host = new URL(fresh.base).host;
      const answer = await new Promise<{ status: number; cookie: string; text: string }>((resolve, reject) => {
        const req = https.request(
          { host: "127.0.0.1", port: ports.https, servername: "localhost", path: "/signup", method: "POST", rejectUnauthorized: false, headers: { host, origin: `https://${host}`, "content-type": "application/x-www-form-urlencoded" } },
          (res) => {
            let text = "";
            res.on("data", (d) => (text += d));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, cookie: String(res.headers["set-cookie"] ?? ""), text }));
          },
        );
        req.once("error", reject);
        req.end(form);
      });
      expect(answer.cookie, `${answer.status} ${answer.text.slice(0, 300)}`).not.toMatch(/holm_session=/);
      expect(answer.text.replace(/<[^>]+>/g, " "), `${answer.status} ${answer.text.slice(0, 500)}`).toContain("the first account administers this server");
    } finally {
      await stopProxy();
      await fresh.stop();
    }
  });
});

