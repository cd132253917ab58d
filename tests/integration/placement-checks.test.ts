import { execFileSync } from "node:child_process";
import fs from "node:fs";
import https from "node:https";
import type net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, docker, json, removeTestBoxes, startServer } from "../support/server";

// A placement the engine can never run is refused with 400 naming the field before anything is
// recorded, inline and queued (was: 422 `failed` after recording a failed box, or 202 and then
// `failed`; `cpus: "0.001"` went to the engine and came back 503 `retryable: true` in runc's words,
// a host cgroup path and a container id included). And a launch the engine refuses answers
// `failed`, not retryable, whatever words its message holds; the path stays out of the reason.

let inline: TestServer;
let queued: TestServer;
let refusing: https.Server;
let tmp: string;
let machine: { cpus: number; memBytes: number };

// runc's refusal as a reviewer saw it: a cgroup path naming "docker" and the container's id.
const RUNC = "failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error setting cgroup config for procHooks process: failed to write \"1000 100000\": write /sys/fs/cgroup/system.slice/docker-4b7a5e06b67e9222f034c596c978dc0edc40135b109e845a7f730de20e31ba4e.scope/cpu.max: invalid argument: unknown";

beforeAll(async () => {
  const info = await docker.info();
  machine = { cpus: info.NCPU, memBytes: info.MemTotal };
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "holm-placement-"));
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: tmp, stdio: "ignore" });
  openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=holm-test-ca", "-keyout", "ca-key.pem", "-out", "ca.pem");
  fs.writeFileSync(path.join(tmp, "client.ext"), "extendedKeyUsage=clientAuth\n");
  openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=c", "-keyout", "client-key.pem", "-out", "client.csr");
  openssl("x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial", "-days", "1", "-extfile", "client.ext", "-out", "client.pem");
  fs.writeFileSync(path.join(tmp, "server.ext"), "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
  openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=s", "-keyout", "server-key.pem", "-out", "server.csr");
  openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial", "-days", "1", "-extfile", "server.ext", "-out", "server.pem");
  const read = (f: string) => fs.readFileSync(path.join(tmp, f), "utf8");
  // An engine that answers, runs the firewall helper (exit 0) and refuses to start a box's
  // container, in runc's words.
  const BOX = "4b7a5e06b67e9222f034c596c978dc0edc40135b109e845a7f730de20e31ba4e";
  refusing = https.createServer({ key: read("server-key.pem"), cert: read("server.pem") }, (req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const p = url.pathname.replace(/^\/v[\d.]+/, "");
    const answer = (status: number, body?: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(body === undefined ? "" : JSON.stringify(body));
    if (p === "/_ping") res.end("OK");
    else if (/^\/images\/.+\/json$/.test(p)) answer(200, { Id: "sha256:00", Size: 1, Created: new Date().toISOString() });
    else if (p === "/networks") answer(200, [{ Name: "holm", Id: "n1" }, { Name: "holm-internal", Id: "n2" }]);
    else if (p.startsWith("/networks/")) answer(200, { Id: "n1", Options: {} });
    else if (p === "/containers/create") answer(201, { Id: url.searchParams.get("name")?.startsWith("holm-box_") ? BOX : "helper" });
    else if (p === `/containers/${BOX}/start`) answer(500, { message: RUNC });
    else if (p === "/containers/helper/start") answer(204);
    else if (p === "/containers/helper/wait") answer(200, { StatusCode: 0 });
    else if (p.endsWith("/logs")) answer(200);
    else if (req.method === "DELETE") answer(204);
    else answer(404, { message: "page not found" });
  });
  await new Promise<void>((r) => refusing.listen(0, "127.0.0.1", () => r()));
  [inline, queued] = await Promise.all([startServer({ HOLM_BOX_MEMORY_MAX: "4096g" }), startServer({ HOLM_SERVER_JOBS: "queue", HOLM_BOX_MEMORY_MAX: "4096g" })]);
  const res = await inline.api("/v1/runtimes", {
    method: "POST",
    json: { name: "refusing", provider: "docker", fields: { host: `tcp://127.0.0.1:${(refusing.address() as net.AddressInfo).port}` }, secrets: { ca: read("ca.pem"), cert: read("client.pem"), key: read("client-key.pem") } },
  });
  expect(res.status, JSON.stringify(await json(res))).toBeLessThan(300);
}, 120_000);

afterAll(async () => {
  await Promise.all([inline?.stop(), queued?.stop()]);
  refusing?.close();
  await removeTestBoxes();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

const boxIds = async (s: TestServer) => ((await json(await s.api("/v1/boxes"))).boxes as { id: string }[]).map((b) => b.id);

async function refused(s: TestServer, placement: unknown) {
  const before = await boxIds(s);
  const res = await s.api("/v1/boxes", { method: "POST", json: { placement } });
  const body = await json(res);
  // Nothing recorded: no failed box left to delete.
  expect(await boxIds(s)).toEqual(before);
  return { status: res.status, body };
}

describe("placement the engine can never run", () => {
  it("cpus above the machine's: 400 bad_request naming placement.cpus and the machine's CPUs, inline and queued", async () => {
    const over = String(machine.cpus * 100);
    for (const s of [inline, queued]) {
      const r = await refused(s, { cpus: over });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body).toMatchObject({ code: "bad_request", retryable: false });
      expect(r.body.message).toContain(`placement.cpus ${over}`);
      expect(r.body.message).toContain(`(${machine.cpus} CPUs)`);
    }
  });

  it("cpus below the engine's least share (0.01): 400 bad_request naming placement.cpus", async () => {
    for (const cpus of ["0.001", "0.009"]) {
      const r = await refused(inline, { cpus });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body).toMatchObject({ code: "bad_request", retryable: false });
      expect(r.body.message).toMatch(/placement\.cpus/);
      expect(r.body.message).not.toMatch(/cgroup|runc/);
    }
  });

  it("memory above the machine's (within HOLM_BOX_MEMORY_MAX): 400 bad_request naming placement.memory", async () => {
    const over = `${Math.ceil(machine.memBytes / 1024 ** 3) * 2}g`;
    const r = await refused(queued, { memory: over });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body).toMatchObject({ code: "bad_request", retryable: false });
    expect(r.body.message).toContain(`placement.memory ${over}`);
  });
});

describe("an engine that answers and refuses the container", () => {
  it("is `failed` (422), not retryable, though its message names docker; the reason holds no host path or container id", async () => {
    const res = await inline.api("/v1/boxes", { method: "POST", json: { placement: { runtime: "refusing" } } });
    const body = await json(res);
    expect(res.status, JSON.stringify(body)).toBe(422);
    expect(body).toMatchObject({ code: "failed", retryable: false });
    const box = (await json(await inline.api("/v1/boxes"))).boxes.find((b: { placement?: { runtime?: string } }) => b.placement?.runtime === "refusing");
    expect(box.state).toBe("failed");
    for (const text of [body.message, box.reason]) {
      expect(text).toMatch(/could not be created or started/);
      expect(text).not.toMatch(/\/sys\/fs\/cgroup|4b7a5e06b67e9222f034c596c978dc0edc40135b109e845a7f730de20e31ba4e/);
    }
  });
});
