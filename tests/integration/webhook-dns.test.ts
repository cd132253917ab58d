import dgram from "node:dgram";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, startServer } from "../support/server";
import { type Api, twoWorkspaces } from "../support/workspaces";

// A webhook's host name is resolved by the server (docs/decisions/0018, "Public targets only").
// Through getaddrinfo, every lookup of the process shares libuv's two threads for slow work, so a
// member whose names are served by a nameserver that never answers (theirs: any domain can be
// delegated to one) queued every other lookup behind theirs, another workspace's webhook
// included, for the resolver's timeout each. A real server resolves through a nameserver on a
// loopback address that takes queries and answers none (its /etc/resolv.conf bound over in a
// mount namespace of its own, tests/support/server.ts), so each DNS query under it times out.

const RESOLVER_TIMEOUT_S = 10;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "holm-webhook-dns-"));
const ns = `127.${50 + (process.pid % 150)}.${process.pid % 250}.${1 + (Date.now() % 250)}`;
let silent: dgram.Socket;
let server: TestServer;
let asA: Api;
let asB: Api;

beforeAll(async () => {
  silent = dgram.createSocket("udp4");
  // Takes every query and answers none.
  silent.on("message", () => undefined);
  await new Promise<void>((r) => silent.bind(53, ns, r));
  const conf = path.join(work, "resolv.conf");
  fs.writeFileSync(conf, `nameserver ${ns}\noptions timeout:${RESOLVER_TIMEOUT_S} attempts:1\n`);
  server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_TEST_RESOLV_CONF: conf });
  ({ asA, asB } = await twoWorkspaces(server));
}, 120_000);

afterAll(async () => {
  await server?.stop();
  silent?.close();
  fs.rmSync(work, { recursive: true, force: true });
});

async function create(api: Api, url: string) {
  const started = Date.now();
  const res = await api("/v1/webhooks", { method: "POST", json: { url, events: ["box.paused"] } });
  return { status: res.status, body: await res.json(), ms: Date.now() - started };
}

describe("webhook names that never resolve", () => {
  it("one workspace's creates with names whose nameserver never answers do not hold up another workspace's create; each is 400 within 6 s", async () => {
    // Workspace A: 6 creates at once, each a name only the silent nameserver could answer.
    const slow = Array.from({ length: 6 }, (_, i) => create(asA, `http://hook-${i}.never-answers.example/x`));
    await new Promise((r) => setTimeout(r, 1500));
    // Meanwhile workspace B makes a webhook whose name the server resolves from /etc/hosts.
    const other = await create(asB, "http://localhost/x");
    expect(other.status).toBe(400);
    expect(other.body.message).toMatch(/"localhost" does not resolve to a public address/);
    expect(other.ms, "workspace B's create waited on workspace A's lookups").toBeLessThan(3000);
    // A's creates are refused in the words of a name that does not resolve, without waiting out the resolver.
    for (const r of await Promise.all(slow)) {
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ code: "bad_request", message: expect.stringMatching(/^url: "hook-\d\.never-answers\.example" does not resolve to a public address/), retryable: false });
      expect(r.ms).toBeLessThan(6500);
    }
  }, 60_000);
});
