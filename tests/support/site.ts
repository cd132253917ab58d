import fs from "node:fs";
import path from "node:path";
import type { TestServer } from "./server";

// A small web site served inside a box (boxes have no internet here): every file of
// tests/fixtures/site is written into the box and a static server (the box's own Node, which
// runs the agent) serves it on http://127.0.0.1:8000/ for the box's Chromium. Pages that need
// a slow answer ask for /slow?ms=N (the body is "ok" after N ms); /echo answers with what it
// was sent (method, headers, body) as JSON.

export const SITE_DIR = path.resolve(import.meta.dirname, "../fixtures/site");
export const SITE = "http://127.0.0.1:8000";
const BOX_DIR = "/srv/site";

const SERVE_JS = String.raw`
const http = require("http"), fs = require("fs"), path = require("path");
const root = ${JSON.stringify(BOX_DIR)};
const types = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css", ".json": "application/json", ".txt": "text/plain", ".png": "image/png" };
http.createServer((req, res) => {
  const u = new URL(req.url, "http://x");
  if (u.pathname === "/slow") {
    setTimeout(() => { res.writeHead(200, { "content-type": "text/plain" }); res.end("ok"); }, Number(u.searchParams.get("ms") || 1000));
    return;
  }
  if (u.pathname === "/echo") {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ method: req.method, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") }));
    });
    return;
  }
  const p = path.join(root, path.normalize(u.pathname === "/" ? "/index.html" : u.pathname));
  if (!p.startsWith(root)) { res.writeHead(403); res.end(); return; }
  fs.readFile(p, (err, data) => {
    if (err) { res.writeHead(404, { "content-type": "text/plain" }); res.end("not found"); return; }
    res.writeHead(200, { "content-type": types[path.extname(p)] || "application/octet-stream" });
    res.end(data);
  });
}).listen(8000, "127.0.0.1");
`;

async function ok(res: Response, what: string): Promise<any> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${what}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : {};
}

/** Writes the fixture site into the box and starts its server; resolves once it answers. */
export async function serveSite(server: Pick<TestServer, "api">, boxId: string): Promise<void> {
  const files = fs.readdirSync(SITE_DIR).filter((f) => fs.statSync(path.join(SITE_DIR, f)).isFile());
  for (const f of [...files.map((f) => [`${BOX_DIR}/${f}`, fs.readFileSync(path.join(SITE_DIR, f))] as const), [`${BOX_DIR}/.serve.js`, Buffer.from(SERVE_JS)] as const]) {
    await ok(await server.api(`/v1/boxes/${boxId}/files`, { method: "PUT", json: { path: f[0], contents_base64: Buffer.from(f[1]).toString("base64") } }), `write ${f[0]}`);
  }
  await ok(
    await server.api(`/v1/boxes/${boxId}/exec`, {
      method: "POST",
      json: { argv: ["sh", "-c", `nohup node ${BOX_DIR}/.serve.js >/tmp/site.log 2>&1 &`], timeout_ms: 10_000 },
    }),
    "start the site",
  );
  for (let i = 0; i < 50; i++) {
    const r = await ok(
      await server.api(`/v1/boxes/${boxId}/exec`, {
        method: "POST",
        json: { argv: ["node", "-e", `require("http").get("${SITE}/index.html", r => process.exit(r.statusCode === 200 ? 0 : 1)).on("error", () => process.exit(1))`], timeout_ms: 5000 },
      }),
      "probe the site",
    );
    if (r.code === 0) return;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error("the fixture site in the box did not answer");
}
