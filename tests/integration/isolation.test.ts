import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, docker, execIn, json, removeTestBoxes, startServer } from "../support/server";

// Boxes reach neither each other nor the server's API, and a box with network=false has no
// route out. Each refusal has a positive control, so the test cannot pass by accident.

let server: TestServer;
let open: any;
let closed: any;
let hostService: net.Server;
let hostPort: number;
// "The outside": a host of our own in a network namespace, reached through the host's routing.
const NS = `holmout${process.pid % 100000}`;
const OUTSIDE_IP = "10.250.77.2";
const OUTSIDE_PORT = 8777;
let outside: ChildProcess | undefined;

function sh(...argv: string[]) {
  execFileSync(argv[0]!, argv.slice(1), { stdio: "pipe" });
}

function makeOutsideHost() {
  sh("ip", "netns", "add", NS);
  sh("ip", "link", "add", `${NS}h`, "type", "veth", "peer", "name", `${NS}n`);
  sh("ip", "link", "set", `${NS}n`, "netns", NS);
  sh("ip", "addr", "add", "10.250.77.1/30", "dev", `${NS}h`);
  sh("ip", "link", "set", `${NS}h`, "up");
  sh("ip", "netns", "exec", NS, "ip", "addr", "add", `${OUTSIDE_IP}/30`, "dev", `${NS}n`);
  sh("ip", "netns", "exec", NS, "ip", "link", "set", `${NS}n`, "up");
  sh("ip", "netns", "exec", NS, "ip", "link", "set", "lo", "up");
  sh("ip", "netns", "exec", NS, "ip", "route", "add", "default", "via", "10.250.77.1");
  outside = spawn("ip", [
    "netns", "exec", NS, process.execPath, "-e",
    `require("net").createServer((s) => { s.on("error", () => {}); s.end("outside\\n"); }).listen(${OUTSIDE_PORT}, "0.0.0.0")`,
  ], { stdio: "ignore" });
}

function removeOutsideHost() {
  outside?.kill();
  try {
    sh("ip", "link", "del", `${NS}h`);
  } catch {}
  try {
    sh("ip", "netns", "del", NS);
  } catch {}
}

async function ipOf(id: string) {
  const info = await docker.getContainer(`holm-${id}`).inspect();
  const nets = info.NetworkSettings.Networks;
  const n = Object.values(nets)[0]!;
  return { ip: n.IPAddress, gateway: n.Gateway };
}

/** Tries a TCP connect from inside a box; true when it connects within 3 s. */
async function canConnect(boxId: string, host: string, port: number) {
  const r = await execIn(boxId, ["timeout", "3", "bash", "-c", `exec 3<>/dev/tcp/${host}/${port}`]);
  return r.code === 0;
}

beforeAll(async () => {
  server = await startServer();
  // A host service on all interfaces: what "the outside" looks like from a box here.
  hostService = net.createServer((s) => {
    s.on("error", () => {});
    s.end("hi\n");
  });
  await new Promise<void>((r) => hostService.listen(0, "0.0.0.0", () => r()));
  hostPort = (hostService.address() as net.AddressInfo).port;
  makeOutsideHost();
  const [a, b] = await Promise.all([
    server.api("/v1/boxes", { method: "POST", json: {} }),
    server.api("/v1/boxes", { method: "POST", json: { spec: { policy: { network: false } } } }),
  ]);
  open = await json(a);
  closed = await json(b);
  expect(open.state, JSON.stringify(open)).toBe("ready");
  expect(closed.state, JSON.stringify(closed)).toBe("ready");
});

afterAll(async () => {
  removeOutsideHost();
  hostService?.close();
  await server?.stop();
  await removeTestBoxes();
});

describe("network isolation", () => {
  it("the server still reaches a network=false box (it became ready) on its own address", async () => {
    const { ip } = await ipOf(closed.id);
    expect(ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    const banner = await new Promise<string>((resolve, reject) => {
      const s = net.connect(5900, ip, () => {});
      s.once("data", (d) => {
        resolve(d.toString());
        s.destroy();
      });
      s.once("error", reject);
    });
    expect(banner).toMatch(/^RFB 003\.00\d/);
  });

  it("an open box has a route out (control); a network=false box has none", async () => {
    const deadline = Date.now() + 5000;
    let reached = false;
    while (!reached && Date.now() < deadline) reached = await canConnect(open.id, OUTSIDE_IP, OUTSIDE_PORT);
    expect(reached).toBe(true);
    expect(await canConnect(closed.id, OUTSIDE_IP, OUTSIDE_PORT)).toBe(false);
  });

  it("no box opens a connection to the host itself, whatever the service binds", async () => {
    // Control: the service answers on the host's bridge addresses (from the host).
    const { gateway: openGw } = await ipOf(open.id);
    const { gateway: closedGw } = await ipOf(closed.id);
    await new Promise<void>((resolve, reject) => {
      const s = net.connect(hostPort, openGw, () => {
        s.destroy();
        resolve();
      });
      s.once("error", reject);
    });
    expect(await canConnect(open.id, openGw, hostPort)).toBe(false);
    expect(await canConnect(closed.id, openGw, hostPort)).toBe(false);
    expect(await canConnect(closed.id, closedGw, hostPort)).toBe(false);
  });

  it("a box cannot reach another box, while the host can (control)", async () => {
    const other = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
    try {
      const { ip } = await ipOf(other.id);
      // The host reaches the other box's VNC...
      await new Promise<void>((resolve, reject) => {
        const s = net.connect(5900, ip, () => {
          s.destroy();
          resolve();
        });
        s.once("error", reject);
      });
      // ...but a box on the same network does not, nor does a closed one.
      expect(await canConnect(open.id, ip, 5900)).toBe(false);
      expect(await canConnect(open.id, ip, 7070)).toBe(false);
      expect(await canConnect(closed.id, ip, 5900)).toBe(false);
    } finally {
      await server.api(`/v1/boxes/${other.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    }
  });

  it("a box cannot reach the server's API", async () => {
    const port = Number(new URL(server.base).port);
    const { gateway } = await ipOf(open.id);
    expect(await canConnect(open.id, gateway, port)).toBe(false);
    expect(await canConnect(open.id, "127.0.0.1", port)).toBe(false);
  });
});
