import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type { RemoteEngine } from "./remote-engine";

// The same second engine (remote-engine.ts), reached over ssh as well: Debian's sshd, run as a
// process of the test's own (never the machine's ssh service), in the engine's network namespace
// on its address. Its host key and the one authorised client key are made here with ssh-keygen;
// `SetEnv DOCKER_HOST` points `docker system dial-stdio` at that engine's socket. Needs
// openssh-server installed (scripts/setup.sh does it, without starting its service).

export interface SshEndpoint {
  /** `ssh://root@IP:2222`, as `fields.host` of a runtime. */
  host: string;
  /** The host's public key line (`ssh-ed25519 AAAA…`): `fields.host_key`. */
  hostKey: string;
  /** Its SHA256 fingerprint, as `ssh-keygen -lf` prints it. */
  fingerprint: string;
  /** Another host key, the host never shows it: pinning it must be refused. */
  wrongHostKey: string;
  /** The client's private key (OpenSSH format): `secrets.ssh_key`. */
  key: string;
  /** sshd's own log (stderr, -e). */
  log(): string;
  stop(): Promise<void>;
}

const PORT = 2222;

function keygen(file: string, comment: string): { priv: string; pub: string } {
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", file], { stdio: "ignore" });
  return { priv: fs.readFileSync(file, "utf8"), pub: fs.readFileSync(`${file}.pub`, "utf8").trim() };
}

/** Waits until something answers on ip:port with an SSH banner. */
async function banner(ip: string, port: number, deadline: number, sshd: ChildProcess, log: () => string): Promise<void> {
  for (;;) {
    if (sshd.exitCode !== null) throw new Error(`sshd exited (${sshd.exitCode}):\n${log().slice(-2000)}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, ip);
      s.setTimeout(1000, () => s.destroy());
      s.once("data", (d) => {
        s.destroy();
        resolve(d.toString("latin1").startsWith("SSH-2.0-"));
      });
      s.once("error", () => resolve(false));
      s.once("close", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`sshd did not answer on ${ip}:${port}:\n${log().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Starts sshd in `engine`'s namespace, in front of its engine. */
export async function startSshd(engine: RemoteEngine): Promise<SshEndpoint> {
  if (!fs.existsSync("/usr/sbin/sshd")) throw new Error("sshd is missing: run scripts/setup.sh (it installs openssh-server)");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-sshd-"));
  let sshd: ChildProcess | undefined;
  let log = "";
  const stop = async () => {
    if (sshd && sshd.exitCode === null) {
      const exited = new Promise((r) => sshd!.once("exit", r));
      // Its own process group: the per-connection children go too.
      try {
        process.kill(-sshd.pid!, "SIGTERM");
      } catch {
        /* gone */
      }
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (sshd.exitCode === null) {
        try {
          process.kill(-sshd.pid!, "SIGKILL");
        } catch {
          /* gone */
        }
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    const hostKey = keygen(path.join(dir, "host_ed25519"), "holm-test-host");
    const wrong = keygen(path.join(dir, "other_ed25519"), "holm-test-other");
    const client = keygen(path.join(dir, "client_ed25519"), "holm-test-client");
    fs.writeFileSync(path.join(dir, "authorized_keys"), `${client.pub}\n`, { mode: 0o600 });
    const fingerprint = execFileSync("ssh-keygen", ["-lf", path.join(dir, "host_ed25519.pub")], { encoding: "utf8" }).split(" ")[1]!;
    const conf = path.join(dir, "sshd_config");
    fs.writeFileSync(
      conf,
      [
        `ListenAddress ${engine.ip}:${PORT}`,
        `HostKey ${path.join(dir, "host_ed25519")}`,
        `PidFile ${path.join(dir, "sshd.pid")}`,
        `AuthorizedKeysFile ${path.join(dir, "authorized_keys")}`,
        "PermitRootLogin prohibit-password",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        // The keys live in a temporary directory, not in root's ~/.ssh.
        "StrictModes no",
        "PrintMotd no",
        // MaxSessions stays OpenSSH's default (10): the server's agent must live with it.
        `SetEnv DOCKER_HOST=unix://${engine.socket}`,
        "LogLevel VERBOSE",
        "",
      ].join("\n"),
    );
    // sshd's privilege separation directory (Debian's service makes it at start).
    fs.mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
    sshd = spawn("nsenter", [`--net=/var/run/netns/${engine.ns}`, "/usr/sbin/sshd", "-D", "-e", "-f", conf], { stdio: ["ignore", "pipe", "pipe"], detached: true });
    sshd.stdout!.on("data", (d) => (log += d));
    sshd.stderr!.on("data", (d) => (log += d));
    await banner(engine.ip, PORT, Date.now() + 20_000, sshd, () => log);
    return {
      host: `ssh://root@${engine.ip}:${PORT}`,
      hostKey: hostKey.pub.split(" ").slice(0, 2).join(" "),
      fingerprint,
      wrongHostKey: wrong.pub.split(" ").slice(0, 2).join(" "),
      key: client.priv,
      log: () => log,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
