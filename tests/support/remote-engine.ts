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
  /** A client for checks from the test (over the engine's local socket). */
  docker: Docker;
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

function makeCerts(dir: string, ip: string): void {
  const o = (...args: string[]) => sh("openssl", args, { cwd: dir });
  o("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=holm-test-ca", "-keyout", "ca-key.pem", "-out", "ca.pem");
  fs.writeFileSync(path.join(dir, "server.ext"), `subjectAltName=IP:${ip}\nextendedKeyUsage=serverAuth\n`);
  fs.writeFileSync(path.join(dir, "client.ext"), "extendedKeyUsage=clientAuth\n");
  for (const who of ["server", "client"]) {
    o("req", "-newkey", "rsa:2048", "-nodes", "-subj", `/CN=holm-test-${who}`, "-keyout", `${who}-key.pem`, "-out", `${who}.csr`);
    o("x509", "-req", "-in", `${who}.csr`, "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial", "-days", "1", "-extfile", `${who}.ext`, "-out", `${who}.pem`);
  }
}

/** Starts the engine; `run` makes every name unique (netns, veth, roots). */
export async function startRemoteEngine(run: string): Promise<RemoteEngine> {
  const h = createHash("sha256").update(run).digest();
  const id = h.subarray(0, 4).toString("hex");
  const ns = `holm-rt-${id}`;
  const vethHost = `hrt${id}`;
  const vethNs = `hrn${id}`;
  // 10.213.X.Y/30: .1 here, .2 in the namespace.
  const third = h[4]!;
  const fourth = (h[5]! % 64) * 4;
  const hostIp = `10.213.${third}.${fourth + 1}`;
  const nsIp = `10.213.${third}.${fourth + 2}`;
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
    for (const dir of [dataRoot, execRoot]) {
      try {
        fs.rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
      } catch (err) {
        console.warn(`[tests] could not remove ${dir}: ${(err as Error).message}`);
      }
    }
    fs.rmSync(sock, { force: true });
    fs.rmSync(pidfile, { force: true });
    fs.rmSync(certs, { recursive: true, force: true });
  };

  try {
    sh("ip", ["netns", "add", ns]);
    sh("ip", ["link", "add", vethHost, "type", "veth", "peer", "name", vethNs]);
    sh("ip", ["link", "set", vethNs, "netns", ns]);
    sh("ip", ["addr", "add", `${hostIp}/30`, "dev", vethHost]);
    sh("ip", ["link", "set", vethHost, "up"]);
    sh("ip", ["netns", "exec", ns, "ip", "addr", "add", `${nsIp}/30`, "dev", vethNs]);
    sh("ip", ["netns", "exec", ns, "ip", "link", "set", vethNs, "up"]);
    sh("ip", ["netns", "exec", ns, "ip", "link", "set", "lo", "up"]);
    makeCerts(certs, nsIp);
    // nsenter, not `ip netns exec`: that also remounts /sys, hiding the cgroups dockerd needs.
    daemon = spawn(
      "nsenter",
      [
        `--net=/var/run/netns/${ns}`, "dockerd",
        "--data-root", dataRoot, "--exec-root", execRoot, "--pidfile", pidfile,
        "-H", `unix://${sock}`, "-H", `tcp://${nsIp}:2376`,
        "--tlsverify", "--tlscacert", path.join(certs, "ca.pem"),
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
    const read = (f: string) => fs.readFileSync(path.join(certs, f), "utf8");
    return { host: `tcp://${nsIp}:2376`, ns, tls: { ca: read("ca.pem"), cert: read("client.pem"), key: read("client-key.pem") }, docker, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
