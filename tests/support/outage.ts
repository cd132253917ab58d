import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { freePort } from "./server";

// Outages a test makes on purpose: a Redis of its own it can stop and start again (the shared
// test Redis serves other suites and must stay up), and a TCP relay in front of PostgreSQL it
// can cut, as a network partition would.

export interface OwnRedis {
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
}

/** A redis-server on a free port with no snapshots: a restart loses every key, as the real one's does. */
export async function ownRedis(): Promise<OwnRedis> {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-redis-"));
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], { stdio: "ignore" });
    for (let i = 0; i < 100; i++) {
      if (await canConnect(port)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error("redis-server did not start");
  };
  const stop = async () => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((r) => c.once("exit", r));
    c.kill("SIGKILL");
    await exited;
  };
  await start();
  return { url: `redis://127.0.0.1:${port}`, stop, start };
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });
}

export interface Relay {
  port: number;
  /** Closes the listener and every connection through it: new ones are refused. */
  cut(): Promise<void>;
  /** Listens again on the same port. */
  mend(): Promise<void>;
}

/** Forwards 127.0.0.1:<port> to `target` (host:port) until cut. */
export async function tcpRelay(target: { host: string; port: number }): Promise<Relay> {
  const port = await freePort();
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  const listen = () =>
    new Promise<void>((resolve) => {
      server = net.createServer((client) => {
        const up = net.connect(target.port, target.host);
        for (const s of [client, up]) {
          sockets.add(s);
          s.once("close", () => sockets.delete(s));
          s.on("error", () => (client.destroy(), up.destroy()));
        }
        client.pipe(up).pipe(client);
      });
      server.listen(port, "127.0.0.1", () => resolve());
    });
  await listen();
  return {
    port,
    cut: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server!.close(() => resolve());
      }),
    mend: listen,
  };
}
