import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Docker from "dockerode";

// A second Docker engine on this machine that is "another host" to the server: its own network
// namespace, reached only over a veth pair on a private /30, with TLS client auth on tcp:2376
// (certificates made here with openssl). Its boxes' bridges live in that namespace, so the server
// cannot route to them: exactly the case of an engine on another machine.

export interface RemoteEngine {
  /** `tcp://IP:2376`, as `fields.host` of a runtime. */
  host: string;
  /** PEM client credentials: `secrets` of a runtime. */
  tls: { ca: string; cert: string; key: string };
  /** The network namespace it runs in (its "host"). */
  ns: string;
  /** Its address (in the namespace), where it listens. */
  ip: string;
  /** The host's end of its veth pair: set down, the engine is cut off as a host that went away. */
  link: string;
  /** A client for checks from the test (over the engine's local socket). */
  docker: Docker;
  /** That local socket's path (an sshd in the namespace points `docker system dial-stdio` at it). */
  socket: string;
  stop(): Promise<void>;
}

function sh(cmd: string, args: string[], opts: { cwd?: string } = {}): string {
  return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], ...opts });
}

function quiet(cmd: string, args: string[]): void {
  try {
    sh(cmd, args);
  } catch {
    /* already gone */
  }
}

/** A CA and a client certificate it signs (ca.pem, client.pem, client-key.pem) in `dir`. */
function makeCa(dir: string): void {
  const o = (...args: string[]) => sh("openssl", args, { cwd: dir });
  o("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=holm-test-ca", "-keyout", "ca-key.pem", "-out", "ca.pem");
  fs.writeFileSync(path.join(dir, "client.ext"), "extendedKeyUsage=clientAuth\n");
  o("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=holm-test-client", "-keyout", "client-key.pem", "-out", "client.csr");
  o("x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial", "-days", "1", "-extfile", "client.ext", "-out", "client.pem");
}

/** A server certificate for `ip` (server.pem, server-key.pem in `dir`) signed by the CA in `caDir`. */
function makeServerCert(caDir: string, dir: string, ip: string): void {
  const o = (...args: string[]) => sh("openssl", args, { cwd: dir });
  fs.writeFileSync(path.join(dir, "server.ext"), `subjectAltName=IP:${ip}\nextendedKeyUsage=serverAuth\n`);
  o("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=holm-test-server", "-keyout", "server-key.pem", "-out", "server.csr");
  o("x509", "-req", "-in", "server.csr", "-CA", path.join(caDir, "ca.pem"), "-CAkey", path.join(caDir, "ca-key.pem"), "-CAcreateserial", "-days", "1", "-extfile", "server.ext", "-out", "server.pem");
}

/**
 * A host bridge several engines share, as machines share a LAN (a swarm's nodes reach each
 * other on it): 10.214.X.0/24, .1 on this host. Made by `startLan`, removed by its `stop`.
 */
export interface Lan {
  bridge: string;
  /** The first three octets, e.g. `10.214.7`. */
  prefix: string;
  /** One CA for every engine on it, and the client credentials it signs (a runtime's `secrets`). */
  certs: string;
  tls: { ca: string; cert: string; key: string };
  stop(): void;
}

/** A bridge of its own for `run` (unique names), with traffic across it let through (FORWARD). */
export function startLan(run: string): Lan {
  const h = createHash("sha256").update(`lan\u0000${run}`).digest();
  const bridge = `hlb${h.subarray(0, 4).toString("hex")}`;
  const prefix = `10.214.${h[4]!}`;
  // Docker's FORWARD policy is DROP and bridged frames pass iptables here (bridge-nf-call-iptables).
  const rule = ["FORWARD", "-i", bridge, "-o", bridge, "-j", "ACCEPT"];
  const certs = fs.mkdtempSync(path.join(os.tmpdir(), "holm-lan-certs-"));
  const stop = () => {
    quiet("iptables", ["-D", ...rule]);
    quiet("ip", ["link", "del", bridge]);
    fs.rmSync(certs, { recursive: true, force: true });
  };
  try {
    makeCa(certs);
    sh("ip", ["link", "add", bridge, "type", "bridge"]);
    sh("ip", ["addr", "add", `${prefix}.1/24`, "dev", bridge]);
    sh("ip", ["link", "set", bridge, "up"]);
    sh("iptables", ["-I", ...rule]);
  } catch (err) {
    stop();
    throw err;
  }
  const read = (f: string) => fs.readFileSync(path.join(certs, f), "utf8");
  return { bridge, prefix, certs, tls: { ca: read("ca.pem"), cert: read("client.pem"), key: read("client-key.pem") }, stop };
}

/**
 * Starts the engine; `run` makes every name unique (netns, veth, roots). With `lan`, the engine
 * sits on that bridge at `.{index + 2}` instead of a /30 of its own.
 */
export async function startRemoteEngine(run: string, lan?: { lan: Lan; index: number }): Promise<RemoteEngine> {
  const h = createHash("sha256").update(lan ? `${run}\u0000${lan.index}` : run).digest();
  const id = h.subarray(0, 4).toString("hex");
  const ns = `holm-rt-${id}`;
  const vethHost = `hrt${id}`;
  const vethNs = `hrn${id}`;
  // 10.213.X.Y/30: .1 here, .2 in the namespace.
  const third = h[4]!;
  const fourth = (h[5]! % 64) * 4;
  const hostIp = `10.213.${third}.${fourth + 1}`;
  const nsIp = lan ? `${lan.lan.prefix}.${lan.index + 2}` : `10.213.${third}.${fourth + 2}`;
  const dataRoot = `/var/lib/holm-rt-${id}`;
  const execRoot = `/var/run/holm-rt-${id}`;
  const sock = `/var/run/holm-rt-${id}.sock`;
  const pidfile = `/var/run/holm-rt-${id}.pid`;
  const certs = fs.mkdtempSync(path.join(os.tmpdir(), "holm-rt-certs-"));
  let daemon: ChildProcess | undefined;
  let log = "";

  const stop = async () => {
    if (daemon && daemon.exitCode === null) {
      const exited = new Promise((r) => daemon!.once("exit", r));
      daemon.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
      if (daemon.exitCode === null) {
        daemon.kill("SIGKILL");
        await exited;
      }
    }
    // Whatever the engine left running in the namespace (its containerd, shims) goes with it.
    quiet("sh", ["-c", `for p in $(ip netns pids ${ns} 2>/dev/null); do kill -9 $p; done`]);
    // The engine's mounts (its netns file, overlays) outlive it; /proc/mounts names /var/run as /run.
    const roots = [dataRoot, execRoot, execRoot.replace(/^\/var\/run\//, "/run/")].join("|");
    quiet("sh", ["-c", `grep -E ' (${roots})[/ ]' /proc/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l`]);
    quiet("ip", ["link", "del", vethHost]);
    quiet("ip", ["netns", "del", ns]);
    // Not rmSync: engines stopped side by side (a swarm's) remove their ~1 GB roots at once.
    await Promise.all(
      [dataRoot, execRoot].map((dir) =>
        fs.promises.rm(dir, { recursive: true, force: true, maxRetries: 5 }).catch((err) => console.warn(`[tests] could not remove ${dir}: ${(err as Error).message}`)),
      ),
    );
    fs.rmSync(sock, { force: true });
    fs.rmSync(pidfile, { force: true });
    fs.rmSync(certs, { recursive: true, force: true });
  };

  try {
    sh("ip", ["netns", "add", ns]);
    sh("ip", ["link", "add", vethHost, "type", "veth", "peer", "name", vethNs]);
    sh("ip", ["link", "set", vethNs, "netns", ns]);
    if (lan) sh("ip", ["link", "set", vethHost, "master", lan.lan.bridge]);
    else sh("ip", ["addr", "add", `${hostIp}/30`, "dev", vethHost]);
    sh("ip", ["link", "set", vethHost, "up"]);
    sh("ip", ["netns", "exec", ns, "ip", "addr", "add", `${nsIp}/${lan ? 24 : 30}`, "dev", vethNs]);
    sh("ip", ["netns", "exec", ns, "ip", "link", "set", vethNs, "up"]);
    sh("ip", ["netns", "exec", ns, "ip", "link", "set", "lo", "up"]);
    const caDir = lan ? lan.lan.certs : certs;
    if (!lan) makeCa(certs);
    makeServerCert(caDir, certs, nsIp);
    // nsenter, not `ip netns exec`: that also remounts /sys, hiding the cgroups dockerd needs.
    daemon = spawn(
      "nsenter",
      [
        `--net=/var/run/netns/${ns}`, "dockerd",
        "--data-root", dataRoot, "--exec-root", execRoot, "--pidfile", pidfile,
        "-H", `unix://${sock}`, "-H", `tcp://${nsIp}:2376`,
        "--tlsverify", "--tlscacert", path.join(caDir, "ca.pem"),
        "--tlscert", path.join(certs, "server.pem"), "--tlskey", path.join(certs, "server-key.pem"),
        "--containerd-namespace", `holm-rt-${id}`, "--containerd-plugins-namespace", `holm-rt-${id}-p`,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    daemon.stdout!.on("data", (d) => (log += d));
    daemon.stderr!.on("data", (d) => (log += d));
    const docker = new Docker({ socketPath: sock });
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (daemon.exitCode !== null) throw new Error(`dockerd exited (${daemon.exitCode}):\n${log.slice(-3000)}`);
      try {
        await docker.ping();
        break;
      } catch {
        if (Date.now() > deadline) throw new Error(`dockerd did not answer:\n${log.slice(-3000)}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    const read = (f: string) => fs.readFileSync(path.join(caDir, f), "utf8");
    return { host: `tcp://${nsIp}:2376`, ns, ip: nsIp, link: vethHost, tls: { ca: read("ca.pem"), cert: read("client.pem"), key: read("client-key.pem") }, docker, socket: sock, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
