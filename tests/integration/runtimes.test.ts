import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Person, consoleClient } from "../support/console";
import { registerSecret } from "../support/log-secrets";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { type OuterStore, openStore, storeAtRest } from "../support/store";
import { sshKeyPair } from "../support/ssh-keys";

// Seed 000's runtimes (ADR 0017) on a real server: the built-in docker runtime and its `can`, an
// added docker engine (tcp:// with TLS client certs, or ssh://) whose secrets are sealed and never
// come back (not in answers, events, the server's log, nor the store file in plain), who may
// change runtimes, refusals while a box uses one, and a launch refused clearly on an ssh:// engine
// stored without its host key pinned. Nothing here connects to any engine but the local one: the
// hosts are never dialled (tests/integration/remote-engine.test.ts dials tcp:// and ssh://).

let server: TestServer;
let ada: Person;
let adaCsrf: string;
let vic: Person;
let vicCsrf: string;
let key: string;
let tmp: string;
const pem: Record<string, string> = {};
/** A host's public key, as `ssh-keyscan` shows it: `fields.host_key` of an ssh:// engine. */
const hostKey = sshKeyPair().public;

/** A stretch of each secret's body: what would show if a value leaked anywhere. */
const marks = () => Object.values(pem).map((v) => v.split("\n").find((l) => l.length >= 60)!.slice(0, 48));

function store(): OuterStore {
  const db = openStore(server);
  db.pragma("busy_timeout = 5000");
  return db;
}

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "holm-runtimes-"));
  // TLS client material as an operator would make it (local files only; nothing is dialled).
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=holm-test-ca", "-keyout", path.join(tmp, "ca.key"), "-out", path.join(tmp, "ca.pem")], { stdio: "ignore" });
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=holm-test-client", "-keyout", path.join(tmp, "key.pem"), "-out", path.join(tmp, "cert.pem")], { stdio: "ignore" });
  pem.ca = fs.readFileSync(path.join(tmp, "ca.pem"), "utf8");
  pem.cert = fs.readFileSync(path.join(tmp, "cert.pem"), "utf8");
  pem.key = fs.readFileSync(path.join(tmp, "key.pem"), "utf8");
  // An OpenSSH private key, as ssh-keygen writes it.
  pem.ssh_key = sshKeyPair().private;

  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
  const c = consoleClient(server);
  ada = await c.signUp("ada@example.com", "A"); // the first account administers the server
  adaCsrf = c.csrfIn(await c.page(ada, "/keys"));
  key = (await c.createKey(ada, "agent")).secret;
  vic = await c.invite(ada, "vic@example.com", "viewer");
  vicCsrf = c.csrfIn(await c.page(vic, "/keys"));
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

const asSession = (p: Person, csrf: string) => ({ cookie: p.cookie, "x-holm-csrf": csrf });
const tls = (name: string) => ({ name, provider: "docker", fields: { host: "tcp://engine.invalid:2376" }, secrets: { ca: pem.ca, cert: pem.cert, key: pem.key } });

describe("runtimes", () => {
  it('lists the built-in "docker" runtime, the default, with what this server really does under `can`', async () => {
    const list = await json(await server.api("/v1/runtimes"));
    expect(list.runtimes[0]).toMatchObject({ name: "docker", provider: "docker", default: true, builtin: true, secrets_set: [] });
    const one = await json(await server.api("/v1/runtimes/docker"));
    expect(one.can).toEqual({ launch: true, screens: 8, wayland: true, persistent: true, profile: true, pages: true, recording: true, pause: true, stop: true, images: true });
    // Anyone who may read may list; a key reads too.
    expect((await fetch(`${server.base}/v1/runtimes`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    const missing = await server.api("/v1/runtimes/nope");
    expect(missing.status).toBe(404);
    expect(await json(missing)).toMatchObject({ code: "not_found", retryable: false });
  });

  it("adds a docker engine over tcp:// with TLS client certs: secrets are sealed and never come back", async () => {
    const res = await server.api("/v1/runtimes", { method: "POST", json: tls("edge") });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    const out = JSON.parse(text);
    expect(out).toMatchObject({ name: "edge", provider: "docker", default: false, builtin: false, fields: { host: "tcp://engine.invalid:2376" }, secrets_set: ["ca", "cert", "key"] });
    // Launched on through exec tunnels (ADR 0019; tests/integration/remote-engine.test.ts dials one).
    expect(out.can).toMatchObject({ launch: true, pages: true, screens: 8 });
    expect(out.reason).toBeUndefined();
    const got = await (await server.api("/v1/runtimes/edge")).text();
    const listed = await (await server.api("/v1/runtimes")).text();
    const events = await (await server.api("/v1/events?limit=1000")).text();
    for (const m of marks().slice(0, 3)) {
      registerSecret(m, "a runtime's TLS secret (runtimes test)");
      expect(text).not.toContain(m);
      expect(got).not.toContain(m);
      expect(listed).not.toContain(m);
      expect(events).not.toContain(m);
      expect(server.logs()).not.toContain(m);
    }
    expect(JSON.parse(got).secrets_set).toEqual(["ca", "cert", "key"]);
    // At rest: the store holds the secrets sealed, not as text (the file and its write-ahead log).
    const files = storeAtRest(server);
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const bytes = f.bytes.toString("latin1");
      for (const m of marks().slice(0, 3)) expect(bytes, f.name).not.toContain(m);
    }
  });

  it("refuses bad bodies with 400 and never echoes a secret in the message", async () => {
    const cases: [unknown, string, RegExp][] = [
      [{ ...tls("x1"), extra: 1 }, "bad_request", /unknown key "extra"/],
      [{ ...tls("x2"), fields: { host: "tcp://engine.invalid:2376", tls_verify: true } }, "bad_request", /unknown key "tls_verify"/],
      [{ ...tls("x3"), secrets: { ...tls("x3").secrets, password: "hunter2-secret-value" } }, "bad_request", /unknown key "password"/],
      [{ name: "x4", provider: "docker", fields: { host: "tcp://engine.invalid:2375" } }, "bad_request", /TLS client auth; missing ca, cert, key/],
      [{ ...tls("x5"), secrets: { ...tls("x5").secrets, key: "-----BEGIN PRIVATE KEY-----\nnot-a-key-but-a-secret-value\n-----END PRIVATE KEY-----\n" } }, "bad_request", /secrets\.key: not a PEM private key/],
      [{ name: "x6", provider: "docker", fields: { host: "http://engine.invalid" } }, "bad_request", /fields\.host/],
      [{ name: "x7", provider: "e2b", fields: { max_lifetime_secs: 86400 }, secrets: { api_key: "e2b-secret-value" } }, "unsupported", /providers: docker/],
      [{ name: "bad name!", provider: "docker", fields: { host: "ssh://engine.invalid", host_key: hostKey } }, "bad_request", /name/],
      [{ name: "x8", provider: "docker", fields: { host: "ssh://engine.invalid" }, secrets: { ssh_key: pem.ssh_key } }, "bad_request", /fields\.host_key: an ssh:\/\/ engine needs its host key pinned/],
      [{ name: "x9", provider: "docker", fields: { host: "ssh://engine.invalid", host_key: hostKey }, secrets: { ssh_key: "not-a-key-but-a-secret-value" } }, "bad_request", /secrets\.ssh_key: not a private key/],
      [tls("edge"), "denied", /exists/],
      [{ ...tls("docker") }, "denied", /built-in/],
    ];
    for (const [body, code, message] of cases) {
      const res = await server.api("/v1/runtimes", { method: "POST", json: body });
      const text = await res.text();
      const out = JSON.parse(text);
      expect(out, JSON.stringify(body).slice(0, 200)).toMatchObject({ code, message: expect.stringMatching(message) });
      expect(res.status).toBe(code === "denied" ? 409 : 400);
      for (const m of [...marks(), "secret-value", "hunter2"]) expect(text).not.toContain(m);
    }
    // A body that is not JSON is refused without quoting it (it may hold a secret).
    const broken = await server.api("/v1/runtimes", { method: "POST", headers: { "content-type": "application/json" }, body: '{"secrets": {"key": "unterminated-secret-value' });
    expect(broken.status).toBe(400);
    expect(await broken.text()).not.toContain("secret-value");
    expect(server.logs()).not.toContain("secret-value");
    expect(server.logs()).not.toContain("hunter2");
    // None of them was stored.
    const names = (await json(await server.api("/v1/runtimes"))).runtimes.map((r: { name: string }) => r.name);
    expect(names).toEqual(["docker", "edge"]);
  });

  it("only the server token or the server's administrator changes runtimes: a key (member) and a viewer are refused", async () => {
    const asKey = await fetch(`${server.base}/v1/runtimes`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(tls("by-key")) });
    expect(asKey.status).toBe(409);
    expect(await json(asKey)).toMatchObject({ code: "denied", message: expect.stringMatching(/server token or the server's administrator/) });
    const asViewer = await fetch(`${server.base}/v1/runtimes`, { method: "POST", headers: { ...asSession(vic, vicCsrf), "content-type": "application/json" }, body: JSON.stringify(tls("by-viewer")) });
    expect(asViewer.status).toBe(409);
    expect((await json(asViewer)).code).toBe("denied");
    for (const method of ["PATCH", "DELETE"]) {
      const res = await fetch(`${server.base}/v1/runtimes/edge`, { method, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: method === "PATCH" ? "{}" : undefined });
      expect(res.status, method).toBe(409);
    }
    // The administrator, through the console's session (with its CSRF token), may.
    const byAda = await fetch(`${server.base}/v1/runtimes`, {
      method: "POST",
      headers: { ...asSession(ada, adaCsrf), "content-type": "application/json" },
      body: JSON.stringify({ name: "by-ada", provider: "docker", fields: { host: "ssh://holm@engine.invalid:22", host_key: hostKey }, secrets: { ssh_key: pem.ssh_key } }),
    });
    expect(byAda.status, await byAda.clone().text()).toBe(200);
    const gone = await fetch(`${server.base}/v1/runtimes/by-ada`, { method: "DELETE", headers: asSession(ada, adaCsrf) });
    expect(await json(gone)).toEqual({ name: "by-ada", deleted: true });
  });

  it("PATCH changes fields and secrets (null removes one); the built-in runtime is not changed through /v1", async () => {
    const res = await server.api("/v1/runtimes/edge", {
      method: "PATCH",
      json: { fields: { host: "ssh://holm@engine.invalid:2222", host_key: hostKey }, secrets: { ca: null, cert: null, key: null, ssh_key: pem.ssh_key } },
    });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    // The host key is public: it shows, without its comment, so it can be checked against the host's.
    expect(JSON.parse(text)).toMatchObject({ fields: { host: "ssh://holm@engine.invalid:2222", host_key: hostKey.split(" ").slice(0, 2).join(" ") }, secrets_set: ["ssh_key"], can: { launch: true } });
    expect(text).not.toContain(marks()[3]);
    // A combination the provider refuses leaves the runtime as it was.
    const bad = await server.api("/v1/runtimes/edge", { method: "PATCH", json: { fields: { host: "tcp://engine.invalid:2376" } } });
    expect(bad.status).toBe(400);
    expect((await json(await server.api("/v1/runtimes/edge"))).fields.host).toBe("ssh://holm@engine.invalid:2222");
    expect((await server.api("/v1/runtimes/edge", { method: "PATCH", json: { fieldz: {} } })).status).toBe(400);
    for (const method of ["PATCH", "DELETE"]) {
      const r = await server.api("/v1/runtimes/docker", { method, json: method === "PATCH" ? { fields: {} } : undefined });
      expect(r.status, method).toBe(409);
      expect(await json(r)).toMatchObject({ code: "denied", message: expect.stringMatching(/built-in/) });
    }
    expect((await server.api("/v1/runtimes/nope", { method: "PATCH", json: {} })).status).toBe(404);
    expect(server.logs()).not.toContain(marks()[3]);
  });

  it("an ssh:// engine stored without its host key pinned is not launched on (400 unsupported, saying why); an unknown runtime is 404; no box is made", async () => {
    // As a row stored before host keys were pinned would be: launching there would trust any host.
    const now = Date.now();
    const db = store();
    db.prepare(`insert into runtime (name, provider, fields_json, secret_names, sealed, created_at_ms, updated_at_ms) values ('legacy', 'docker', ?, '[]', null, ?, ?)`).run(
      JSON.stringify({ host: "ssh://holm@engine.invalid:2222" }),
      now,
      now,
    );
    db.close();
    expect(await json(await server.api("/v1/runtimes/legacy"))).toMatchObject({ can: { launch: false }, reason: expect.stringMatching(/needs fields\.host_key/) });
    const res = await server.api("/v1/boxes", { method: "POST", json: { placement: { runtime: "legacy" } } });
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({ code: "unsupported", message: expect.stringMatching(/runtime "legacy": an ssh:\/\/ engine needs fields\.host_key/) });
    const unknown = await server.api("/v1/boxes", { method: "POST", json: { placement: { runtime: "nope" } } });
    expect(unknown.status).toBe(404);
    expect((await json(unknown)).code).toBe("not_found");
    const image = await server.api("/v1/runtimes/legacy/image", { method: "POST", json: {} });
    expect(image.status).toBe(400);
    expect((await json(image)).code).toBe("unsupported");
    expect(await json(await server.api("/v1/runtimes/legacy/images"))).toEqual({ images: [] });
    expect((await json(await server.api("/v1/boxes"))).boxes).toEqual([]);
    // Pinning its key through PATCH makes it launchable.
    const pinned = await server.api("/v1/runtimes/legacy", { method: "PATCH", json: { fields: { host_key: hostKey }, secrets: { ssh_key: pem.ssh_key } } });
    expect(await json(pinned)).toMatchObject({ can: { launch: true } });
    expect(await json(await server.api("/v1/runtimes/legacy", { method: "DELETE" }))).toEqual({ name: "legacy", deleted: true });
  });

  it("PATCH and DELETE are refused (409 denied) while a box uses the runtime, and allowed once it is removed", async () => {
    // The engine is never dialled here, so the box that uses it is a record written into the
    // store, as one launched there would be.
    const id = `box_${randomBytes(16).toString("hex")}`;
    const now = Date.now();
    const db = store();
    db.prepare(
      `insert into box (id, owner, runtime, runtime_ref, spec_digest, spec_json, placement_json, state, screens, width, height, created_at_ms, expires_at_ms, last_used_ms)
       values (?, null, 'edge', null, 'x', '{}', '{}', 'failed', 1, 1280, 800, ?, ?, ?)`,
    ).run(id, now, now + 3_600_000, now);
    db.close();
    for (const method of ["PATCH", "DELETE"]) {
      const res = await server.api("/v1/runtimes/edge", { method, json: method === "PATCH" ? { fields: { host: "ssh://engine.invalid" } } : undefined });
      expect(res.status, method).toBe(409);
      expect(await json(res)).toMatchObject({ code: "denied", message: expect.stringContaining(`used by box ${id}`) });
    }
    const again = store();
    again.prepare("update box set removed_at_ms = ?, state = 'gone' where id = ?").run(Date.now(), id);
    again.close();
    const del = await server.api("/v1/runtimes/edge", { method: "DELETE" });
    expect(await json(del)).toEqual({ name: "edge", deleted: true });
    expect((await server.api("/v1/runtimes/edge")).status).toBe(404);
    // Nothing of any secret reached the log or the events on the way.
    const events = await (await server.api("/v1/events?limit=1000")).text();
    for (const m of marks()) {
      expect(server.logs()).not.toContain(m);
      expect(events).not.toContain(m);
    }
  });
});
