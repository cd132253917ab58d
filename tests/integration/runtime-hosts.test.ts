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

describe("removing a box whose engine does not answer", () => {
  it("is 200: the box is gone from holm, its trace and event say why its container was left, and the next start removes it", async () => {
    const port = await deadPort();
    const made = await server.api("/v1/runtimes", { method: "POST", json: tcp("away", `tcp://127.0.0.1:${port}`) });
    expect(made.status, await made.clone().text()).toBe(200);
    // A box whose engine then went away: a real box here, its record moved onto `away` (an
    // engine at a port nothing listens on), so its container stays where the test can see it.
    const launched = await server.api("/v1/boxes", { method: "POST", json: {} });
    const box = await json(launched);
    expect(launched.status, JSON.stringify(box)).toBe(200);
    const id = box.id as string;
    const db = openStore(server);
    db.pragma("busy_timeout = 5000");
    db.prepare("update box set runtime = 'away' where id = ?").run(id);
    db.close();

    const del = await server.api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    const text = await del.text();
    expect(del.status, text).toBe(200);
    const gone = await server.api(`/v1/boxes/${id}`);
    expect(gone.status).toBe(410);
    const why = (await json(gone)).message as string;
    expect(why).toMatch(/was removed: removed; its container could not be removed because the away runtime does not answer; it is removed when that runtime answers again/);
    const trace = await json(await server.api(`/v1/boxes/${id}/trace?limit=100`));
    const entry = trace.entries.find((e: { kind: string }) => e.kind === "gone");
    expect(entry?.data?.reason ?? JSON.stringify(trace.entries)).toMatch(/its container could not be removed because the away runtime does not answer/);
    const events = (await json(await server.api("/v1/events?limit=1000"))).events.filter((e: { box_id: string }) => e.box_id === id);
    expect(events.map((e: { kind: string }) => e.kind)).toContain("box.removed");
    // Removed, so the runtime may go.
    expect((await server.api("/v1/runtimes/away", { method: "DELETE" })).status).toBe(200);

    // The container is still on its engine (here, this machine's) until the server next starts
    // with that engine answering: adoption removes the containers of removed boxes.
    expect((await docker.getContainer(`holm-${id}`).inspect()).State.Running).toBe(true);
    await server.stop();
    server = await server.restart();
    await expect(docker.getContainer(`holm-${id}`).inspect()).rejects.toMatchObject({ statusCode: 404 });
  }, 180_000);
});
