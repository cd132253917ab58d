import http from "node:http";
import net from "node:net";
import { Readable } from "node:stream";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EngineTimeout, boundEngine } from "~/runtime/engine-bound.server";
import { sendImage } from "~/runtime/remote-docker.server";

// The bound on a remote engine's calls (review I) seen from the engine's side: real dockerode
// clients against stand-in engines on loopback. `mute` accepts and never writes; `exporter` is a
// local engine whose `docker save` streams without end; `waiter` answers a container's /wait as
// dockerd does: the headers at once, the body when the container exits.

const BOUND_MS = 400;
const held = new Set<net.Socket>();
let mute: net.Server;
let exporter: http.Server;
let waiter: http.Server;
/** Whether the exporter's current export is still open (its client did not close it). */
let exportOpen = false;

const port = (s: net.Server) => (s.address() as net.AddressInfo).port;
const client = (s: net.Server) => new Docker({ protocol: "http", host: "127.0.0.1", port: port(s) });

beforeAll(async () => {
  mute = net.createServer((s) => {
    held.add(s);
    s.on("error", () => undefined);
  });
  exporter = http.createServer((req, res) => {
    exportOpen = true;
    res.writeHead(200, { "content-type": "application/x-tar" });
    const chunk = Buffer.alloc(64 * 1024);
    const more = () => {
      while (res.write(chunk));
    };
    res.on("drain", more);
    res.on("close", () => (exportOpen = false));
    more();
  });
  waiter = http.createServer((req, res) => {
    if (!/\/wait/.test(req.url ?? "")) return;
    res.writeHead(200, { "content-type": "application/json" });
    res.flushHeaders();
    setTimeout(() => res.end(JSON.stringify({ StatusCode: 0 })), 3 * BOUND_MS);
  });
  for (const s of [exporter, waiter]) s.on("connection", (c) => held.add(c));
  await Promise.all([mute, exporter, waiter].map((s) => new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()))));
});

afterAll(() => {
  for (const s of held) s.destroy();
  for (const s of [mute, exporter, waiter]) s?.close();
});

function endless(): Readable {
  return new Readable({
    read() {
      this.push(Buffer.alloc(64 * 1024));
    },
  });
}

describe("the engine bound", () => {
  it("closes an upload's source when the engine stops taking it", async () => {
    const docker = boundEngine(client(mute), "mute", BOUND_MS);
    const src = endless();
    await expect(docker.loadImage(src)).rejects.toBeInstanceOf(EngineTimeout);
    expect(src.destroyed).toBe(true);
  });

  it("ends the local export when sending an image to an engine that does not answer", async () => {
    const target = boundEngine(client(mute), "mute", BOUND_MS);
    await expect(sendImage(client(exporter), "holm-x11:test", [{ docker: target, host: "mute" }], () => {})).rejects.toBeInstanceOf(EngineTimeout);
    const t0 = Date.now();
    while (exportOpen && Date.now() - t0 < 3000) await new Promise((r) => setTimeout(r, 50));
    expect(exportOpen, "the local engine's export is still open").toBe(false);
  });

  it("lets a container's wait last past the bound once the engine has answered its headers", async () => {
    const docker = boundEngine(client(waiter), "waiter", BOUND_MS);
    await expect(docker.getContainer("c0ffee").wait()).resolves.toEqual({ StatusCode: 0 });
  });

  it("still fails a wait whose engine sends nothing", async () => {
    const docker = boundEngine(client(mute), "mute", BOUND_MS);
    await expect(docker.getContainer("c0ffee").wait()).rejects.toBeInstanceOf(EngineTimeout);
  });
});
