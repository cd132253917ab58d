import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import https from "node:https";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { openStore } from "../support/store";

// Engines that stop answering (review I, items 1, 2, 3, 6): no call to them may hang. Two
// stand-ins for a frozen dockerd, no engine needed: `mute` accepts connections and never writes
// (not even TLS), `half` speaks TLS and answers an image inspect (so a box gets recorded and its
// launch starts) and nothing else. Every engine call is bounded (HOLM_ENGINE_TIMEOUT_SECS, 3 s
// here): the caller hears 503 `unavailable` naming the runtime, a launch there fails, and the
// local engine's launches and the reaper go on meanwhile.

const BOUND_S = 3;
let server: TestServer;
let tmp: string;
const pem: Record<string, string> = {};
const held = new Set<{ destroy(): void }>();
let mute: net.Server;
let half: https.Server;
let deaf: https.Server;
/** `later`: frozen as `half` until thawed, then an engine holding `laterBoxes` (box id by container id), answering their removal. */
let later: https.Server;
let laterThawed = false;
const laterBoxes = new Map<string, string>();
const laterRemoved: string[] = [];
/** How many times the thawed `later` listed its containers. */
let laterLists = 0;
/** When `half` was asked for a ping (each sweep of its rows asks once, right after reading them). */
const halfPings: number[] = [];

function openssl(...args: string[]) {
  execFileSync("openssl", args, { cwd: tmp, stdio: "ignore" });
}

/** `fetch` that gives up after `secs`, with how long the answer took. */
async function timed(p: string, init: RequestInit & { json?: unknown } = {}, secs = 30) {
  const t0 = Date.now();
  const res = await server.api(p, { ...init, signal: AbortSignal.timeout(secs * 1000) });
  return { res, body: await json(res), secs: (Date.now() - t0) / 1000 };
}

async function stateOf(id: string): Promise<{ status: number; state?: string; reason?: string }> {
  const res = await server.api(`/v1/boxes/${id}`);
  const b = await json(res);
  return { status: res.status, state: b.state, reason: b.reason };
}

async function waitFor(id: string, want: (s: { status: number; state?: string }) => boolean, secs: number) {
  const t0 = Date.now();
  let s = await stateOf(id);
  while (!want(s) && Date.now() - t0 < secs * 1000) {
    await new Promise((r) => setTimeout(r, 250));
    s = await stateOf(id);
  }
  return { ...s, secs: (Date.now() - t0) / 1000 };
}

/** Writes a box the store says is ready on `runtime` (as one is when its engine froze), copied from any row. */
function plantBox(runtime: string, ref: string | null = "f00d"): string {
  const db = openStore(server);
  try {
    const row = db.prepare("select * from box order by created_at_ms limit 1").get() as Record<string, unknown>;
    const id = `box_${crypto.randomBytes(8).toString("hex")}`;
    const placement = { ...JSON.parse(String(row.placement_json)), runtime };
    Object.assign(row, { id, runtime, state: "ready", reason: null, runtime_ref: ref && `${ref}${id.slice(4)}`, removed_at_ms: null, start_json: null });
    Object.assign(row, { placement_json: JSON.stringify(placement), expires_at_ms: Date.now() + 3_600_000, idle_timeout_secs: null, last_used_ms: Date.now() });
    const cols = Object.keys(row);
    db.prepare(`insert into box (${cols.map((c) => `"${c}"`).join(", ")}) values (${cols.map(() => "?").join(", ")})`).run(...cols.map((c) => row[c]));
    return id;
  } finally {
    db.close();
  }
}

type Event = { kind: string; box_id?: string; seq: number };
async function eventsOf(id: string): Promise<Event[]> {
  const all = (await json(await server.api("/v1/events?limit=1000"))).events as Event[];
  return all.filter((e) => e.box_id === id).sort((a, b) => a.seq - b.seq);
}

async function boxesOn(runtime: string): Promise<{ id: string; state: string; reason?: string }[]> {
  const list = await json(await server.api("/v1/boxes"));
  return (list.boxes as { id: string; state: string; reason?: string; placement?: { runtime?: string } }[]).filter((b) => b.placement?.runtime === runtime);
}

const runtimeBody = (name: string, port: number) => ({
  name,
  provider: "docker",
  fields: { host: `tcp://127.0.0.1:${port}` },
  secrets: { ca: pem.ca, cert: pem.cert, key: pem.key },
});

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "holm-hang-"));
  openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=holm-test-ca", "-keyout", "ca-key.pem", "-out", "ca.pem");
  fs.writeFileSync(path.join(tmp, "client.ext"), "extendedKeyUsage=clientAuth\n");
  openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=holm-test-client", "-keyout", "client-key.pem", "-out", "client.csr");
  openssl("x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial", "-days", "1", "-extfile", "client.ext", "-out", "client.pem");
  fs.writeFileSync(path.join(tmp, "server.ext"), "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
  openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=holm-test-server", "-keyout", "server-key.pem", "-out", "server.csr");
  openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial", "-days", "1", "-extfile", "server.ext", "-out", "server.pem");
  const read = (f: string) => fs.readFileSync(path.join(tmp, f), "utf8");
  Object.assign(pem, { ca: read("ca.pem"), cert: read("client.pem"), key: read("client-key.pem") });

  mute = net.createServer((s) => {
    held.add(s);
    s.on("error", () => undefined);
  });
  // `half`: the image a box needs is there; every other call (ping, networks, containers) never
  // answers. `deaf` answers its ping as well: an engine up whose container calls hang.
  const engine = (pings: boolean) => (req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse) => {
    if (req.method === "GET" && /^\/(v[\d.]+\/)?images\/.+\/json$/.test(req.url ?? "")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ Id: "sha256:00", Size: 1, Created: new Date().toISOString() }));
    } else if (/\/_ping$/.test(req.url ?? "")) {
      if (pings) res.end("OK");
      else halfPings.push(Date.now());
    }
  };
  const tls = { key: read("server-key.pem"), cert: read("server.pem") };
  half = https.createServer(tls, engine(false));
  deaf = https.createServer(tls, engine(true));
  const frozen = engine(false);
  later = https.createServer(tls, (req, res) => {
    if (!laterThawed) return frozen(req, res);
    const url = new URL(req.url ?? "/", "http://x");
    const one = /\/containers\/([^/]+)(\/json)?$/.exec(url.pathname);
    const answer = (body: unknown, status = 200) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (url.pathname.endsWith("/_ping")) res.end("OK");
    else if (url.pathname.endsWith("/containers/json") && ++laterLists) answer([...laterBoxes].map(([Id, box]) => ({ Id, State: "exited", Labels: { "holm.box": box } })));
    else if (one && req.method === "GET" && laterBoxes.has(one[1]!)) answer({ Id: one[1], Mounts: [] });
    else if (one && req.method === "DELETE" && laterBoxes.delete(one[1]!)) {
      laterRemoved.push(one[1]!);
      res.writeHead(204).end();
    } else if (one) answer({ message: "No such container" }, 404);
  });
  for (const srv of [half, deaf, later]) srv.on("connection", (s) => held.add(s));
  await Promise.all([mute, half, deaf, later].map((srv) => new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()))));

  server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_ENGINE_TIMEOUT_SECS: String(BOUND_S), HOLM_LAUNCH_CONCURRENCY: "1", HOLM_SERVER_REAP_SECS: "2" });
  for (const [name, srv] of [["mute", mute], ["half", half], ["deaf", deaf], ["later", later]] as const) {
    const res = await server.api("/v1/runtimes", { method: "POST", json: runtimeBody(name, (srv.address() as net.AddressInfo).port) });
    expect(res.status, JSON.stringify(await json(res))).toBeLessThan(300);
  }
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
  for (const s of held) s.destroy();
  mute?.close();
  half?.close();
  deaf?.close();
  later?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe("an engine that does not answer", () => {
  it("answers 503 naming the runtime within the bound: its image route and a box create there", async () => {
    const image = await timed("/v1/runtimes/mute/image", { method: "POST", json: { spec: {} } });
    expect(image.res.status, JSON.stringify(image.body)).toBe(503);
    expect(image.body).toMatchObject({ code: "unavailable", retryable: true });
    expect(image.body.message).toMatch(/the mute runtime does not answer/);
    expect(image.secs).toBeLessThan(BOUND_S + 5);

    const box = await timed("/v1/boxes", { method: "POST", json: { placement: { runtime: "mute" } } });
    expect(box.res.status, JSON.stringify(box.body)).toBe(503);
    expect(box.body).toMatchObject({ code: "unavailable", retryable: true });
    expect(box.body.message).toMatch(/the mute runtime does not answer/);
    expect(box.secs).toBeLessThan(BOUND_S + 5);
  });

  it("fails a launch there within the bound, while a local box starts meanwhile (start slots are per runtime)", async () => {
    // HOLM_LAUNCH_CONCURRENCY=1: the launch hung on `half` must not hold the local engine's slot.
    const far = timed("/v1/boxes", { method: "POST", json: { placement: { runtime: "half" } } });
    await new Promise((r) => setTimeout(r, 300));
    const local = await timed("/v1/boxes", { method: "POST", json: {} }, 150);
    expect(local.res.status, JSON.stringify(local.body)).toBe(200);
    expect(local.body.state).toBe("ready");
    const f = await far;
    expect(f.res.status, JSON.stringify(f.body)).toBe(503);
    expect(f.body).toMatchObject({ code: "unavailable", retryable: true });
    expect(f.body.message).toMatch(/the half runtime does not answer/);
    expect(f.secs).toBeLessThan(2 * BOUND_S + 5);
    const failed = (await boxesOn("half")).at(-1)!;
    expect(failed).toMatchObject({ state: "failed" });
    expect(failed.reason).toMatch(/the half runtime does not answer/);
    await server.api(`/v1/boxes/${local.body.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
  }, 240_000);

  it("a delete of a box whose launch is stuck on the engine answers within the bound", async () => {
    const far = timed("/v1/boxes", { method: "POST", json: { placement: { runtime: "half" } } });
    let stuck: { id: string } | undefined;
    for (let i = 0; i < 20 && !stuck; i++) {
      await new Promise((r) => setTimeout(r, 100));
      stuck = (await boxesOn("half")).find((b) => b.state === "starting");
    }
    expect(stuck).toBeDefined();
    const del = await timed(`/v1/boxes/${stuck!.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    expect(del.res.status, JSON.stringify(del.body)).toBeLessThan(300);
    expect(del.secs).toBeLessThan(2 * BOUND_S + 5);
    expect((await stateOf(stuck!.id)).status).toBe(410);
    await far;
  }, 60_000);

  it("the reaper removes an expired local box on time while a box on the hung engine exists; that box becomes unreachable", async () => {
    // A box on `half` the store says is ready (as one would be when its engine froze).
    const far = (await boxesOn("half")).find((b) => b.state === "failed")!;
    expect(far).toBeDefined();
    const local = await timed("/v1/boxes", { method: "POST", json: {} }, 150);
    expect(local.res.status, JSON.stringify(local.body)).toBe(200);
    const db = openStore(server);
    try {
      db.prepare("update box set state = 'ready', reason = null, runtime_ref = 'f00d' where id = ?").run(far.id);
      // Past its deadline now, rather than waiting the 60 s a placement allows at least.
      db.prepare("update box set expires_at_ms = ? where id = ?").run(Date.now(), local.body.id);
    } finally {
      db.close();
    }
    const gone = await waitFor(local.body.id, (s) => s.status === 410, 30);
    expect(gone.status, `local box still ${gone.state} after ${gone.secs} s`).toBe(410);
    const far2 = await waitFor(far.id, (s) => s.state === "unreachable", 30);
    expect(far2.state).toBe("unreachable");
    expect(far2.reason).toMatch(/half runtime does not answer/);
  }, 240_000);

  it("a box deleted while the reaper's sweep waits on its engine stays gone, with one box.removed", async () => {
    // A row to copy: a launch that fails there records one (when this test runs alone).
    if (!(await boxesOn("half")).length) await timed("/v1/boxes", { method: "POST", json: { placement: { runtime: "half" } } });
    // The second has no container (its create timed out): its delete is done at once, well
    // before the sweep, which waits a bound for the ping, comes to it.
    const [first, second] = [plantBox("half"), plantBox("half", null)];
    // A ping asked a while after the rows were written is from a sweep that read them (sweeps
    // come 5 s apart here); it waits those 5 s for `half`'s answer, and the delete lands meanwhile.
    const planted = Date.now();
    const swept = () => halfPings.some((t) => t > planted + 500);
    for (let i = 0; i < 200 && !swept(); i++) await new Promise((r) => setTimeout(r, 50));
    expect(swept()).toBe(true);
    const del = await timed(`/v1/boxes/${second}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    expect(del.res.status, JSON.stringify(del.body)).toBeLessThan(300);
    // That sweep goes on to both rows; one more after it.
    expect((await waitFor(first, (s) => s.state === "unreachable", 30)).state).toBe("unreachable");
    // And the sweep after it.
    await new Promise((r) => setTimeout(r, 8_000));
    expect(await stateOf(second)).toMatchObject({ status: 410 });
    const listed = await boxesOn("half");
    expect(listed.map((b) => b.id)).not.toContain(second);
    const kinds = (await eventsOf(second)).map((e) => e.kind);
    expect(kinds.filter((k) => k === "box.removed"), kinds.join(", ")).toHaveLength(1);
    expect(kinds.slice(kinds.indexOf("box.removed") + 1), "events after box.removed").toEqual([]);
    const db = openStore(server);
    try {
      expect(db.prepare("select state from box where id = ?").get(second)).toMatchObject({ state: "gone" });
    } finally {
      db.close();
    }
  }, 120_000);

  it("the container of a launch that timed out is removed once its engine answers again", async () => {
    const far = await timed("/v1/boxes", { method: "POST", json: { placement: { runtime: "later" } } });
    expect(far.res.status, JSON.stringify(far.body)).toBe(503);
    const failed = (await boxesOn("later")).find((b) => b.state === "failed")!;
    expect(failed).toBeDefined();
    // The engine answers again, with no container for the box yet: a sweep looks and finds none.
    laterThawed = true;
    const lists = laterLists;
    for (let i = 0; i < 150 && laterLists <= lists; i++) await new Promise((r) => setTimeout(r, 100));
    expect(laterLists, "no sweep listed the engine's containers").toBeGreaterThan(lists);
    // Then the slow engine makes the container after all (no row names it): a later sweep removes it.
    laterBoxes.set("c0ffee00", failed.id);
    for (let i = 0; i < 150 && !laterRemoved.length; i++) await new Promise((r) => setTimeout(r, 100));
    expect(laterRemoved, "the container the engine made late was not removed").toEqual(["c0ffee00"]);
  }, 60_000);

  it("a server restarted while an engine answers its ping but not its containers listens within one bound of it", async () => {
    // Six boxes there: one bound each before (18 s and the engine's scan), one in all now.
    for (let i = 0; i < 6; i++) plantBox("deaf");
    await server.stop();
    const t0 = Date.now();
    server = await server.restart();
    const secs = (Date.now() - t0) / 1000;
    // A start here takes a few seconds; `half` and `mute` cost a 5 s ping each.
    expect(secs, `listening after ${secs} s`).toBeLessThan(2 * 5 + BOUND_S + 8);
    const deafs = await boxesOn("deaf");
    expect(deafs).toHaveLength(6);
    for (const b of deafs) expect(b).toMatchObject({ state: "unreachable" });
  }, 120_000);

  it("a server restarted while the engine hangs listens and answers", async () => {
    await server.stop();
    const t0 = Date.now();
    server = await server.restart();
    expect((Date.now() - t0) / 1000).toBeLessThan(60);
    const list = await timed("/v1/boxes");
    expect(list.res.status).toBe(200);
  }, 120_000);
});
