import { randomBytes } from "node:crypto";
import Docker from "dockerode";
import { pack } from "tar-stream";
import { parseBytes } from "~/utils/size";
import { FreezeGate, resumeUntilRunning, started } from "./freeze-gate.server";
import { guardBridges } from "./firewall.server";
import { ensureX11Image, x11ImageStatus } from "./image-builder.server";
import { type BoxLaunch, type BuiltImage, type EngineImage, type ImageInfo, type ImageRequest, type ImageStatus, type PlacementNeed, type Runtime, type RuntimeBox, type RuntimeState, type SecretFile, type Shell, BOX_LOG, PauseBusyError, boxCapabilities } from "./runtime";
import { admitOnEngine } from "./docker-admit.server";
import { DIRECT_VIEWER_PORT } from "~/protocol/direct-viewer";
import { watchDeaths } from "./docker-events.server";
import { mountsOf, removeNamedVolume, volumeExists } from "./docker-mounts.server";

export const NETWORK_OPEN = "holm";
export const NETWORK_CLOSED = "holm-internal";
const BOX_LABEL = "holm.box";
/** How many times a pause is tried while the box will not freeze (cgroup v1; see pause). */
const PAUSE_ATTEMPTS = 6;
/** The box's direct viewer port as Docker names it (published only when the spec asks). */
const VIEWER_TCP = `${DIRECT_VIEWER_PORT}/tcp`;

function statusOf(err: unknown): number | undefined {
  return (err as { statusCode?: number }).statusCode;
}

/**
 * Awaits a Docker call, taking the one answer that means it is done already as success: 304 for
 * a container already started or stopped, 404 for one already gone, 409 for a network that
 * exists. Any other error is thrown.
 */
async function unlessAlready(status: number, call: Promise<unknown>): Promise<void> {
  try {
    await call;
  } catch (err) {
    if (statusOf(err) !== status) throw err;
  }
}

/**
 * A tar of the secret files (root, 0600; folders 0700), unpacked into the container: unlike its
 * environment, a file is not handed to every process and `docker exec`.
 */
async function secretsTar(files: SecretFile[]): Promise<Buffer> {
  const p = pack();
  const dirs = new Set<string>();
  for (const f of files) {
    const parts = f.path.replace(/^\/+/, "").split("/");
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join("/");
      // Only folders of our own: /etc itself keeps its mode.
      if (dirs.has(dir) || i === 1) continue;
      dirs.add(dir);
      p.entry({ name: `${dir}/`, type: "directory", mode: 0o700, uid: 0, gid: 0 });
    }
    p.entry({ name: parts.join("/"), mode: 0o600, uid: 0, gid: 0 }, f.data);
  }
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const c of p) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/**
 * The text of a container's log as the engine sends it without a TTY: frames of an 8-byte
 * header (stream, 0, 0, 0, length) and that many bytes, stdout and stderr interleaved in order.
 */
export function demuxLog(buf: Buffer): string {
  if (buf.length < 8 || buf[0]! > 2 || buf[1] !== 0 || buf[2] !== 0 || buf[3] !== 0) return buf.toString("utf8");
  const parts: Buffer[] = [];
  for (let at = 0; at + 8 <= buf.length; ) {
    const size = buf.readUInt32BE(at + 4);
    parts.push(buf.subarray(at + 8, at + 8 + size));
    at += 8 + size;
  }
  return Buffer.concat(parts).toString("utf8");
}

/** Boxes as Docker containers. One container per box; its screens all live inside it. */
export class DockerRuntime implements Runtime {
  readonly name: string;
  readonly docker: Docker;
  /** Pauses kept apart from execs being started (freeze-gate.server.ts). */
  protected readonly freezeGate = new FreezeGate();
  private networks: Promise<void> | undefined;

  /** The engine on a local socket, or (remote-docker.server.ts) a client for another engine. */
  constructor(engine: string | Docker, name = "docker") {
    this.docker = typeof engine === "string" ? new Docker({ socketPath: engine }) : engine;
    this.name = name;
  }

  /** Puts the host's rules for the box bridges in place (this host's iptables). */
  protected guard(bridges: string[]): Promise<void> {
    return guardBridges(bridges);
  }

  watchExits(onExit: (ref: string) => void): () => void {
    return watchDeaths(this.docker, BOX_LABEL, onExit);
  }

  /** More CPUs or memory than the engine's machine has: 400 `bad_request`, before the box is recorded. */
  admitLaunch = (need: PlacementNeed): Promise<void> => admitOnEngine(this.docker, this.name, need);
  async ping(): Promise<boolean> {
    try {
      // Ends when the reaper gives up on it (5 s, box-sync.server.ts): hung pings do not pile up.
      const ping = this.docker.ping as unknown as (opts: { abortSignal: AbortSignal }) => Promise<unknown>;
      await ping.call(this.docker, { abortSignal: AbortSignal.timeout(5_000) });
      return true;
    } catch {
      return false;
    }
  }

  ensureImage(req: ImageRequest, log: (line: string) => void = () => {}): Promise<BuiltImage> {
    return ensureX11Image(this.docker, req, log);
  }

  imageStatus(req: ImageRequest): Promise<ImageStatus> {
    return x11ImageStatus(this.docker, req);
  }

  async imageInfo(image: string): Promise<ImageInfo | undefined> {
    try {
      const info = await this.docker.getImage(image).inspect();
      return { size_bytes: info.Size, created_at_ms: Date.parse(info.Created) };
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return undefined;
      throw err;
    }
  }

  async removeImage(image: string): Promise<boolean> {
    try {
      // Not forced: an image a container still uses (one the store does not know of) stays.
      await this.docker.getImage(image).remove();
      return true;
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return false;
      throw err;
    }
  }

  async listBoxImages(): Promise<EngineImage[]> {
    const list = await this.docker.listImages({ filters: JSON.stringify({ reference: ["holm-x11", "holm-base"] }) });
    return list.flatMap((i) =>
      (i.RepoTags ?? []).filter((t) => /^holm-(x11|base):/.test(t)).map((image) => ({ image, created_at_ms: i.Created * 1000 })),
    );
  }

  prepare(): Promise<void> {
    return this.ensureNetworks();
  }

  /**
   * Two bridges, both without inter-container traffic so boxes cannot reach each other; the
   * closed one is `internal`, so its boxes have no route out while the host still reaches them.
   * The host's rules for them (firewall.server.ts) are checked each time the server starts.
   */
  ensureNetworks(): Promise<void> {
    this.networks ??= (async () => {
      const existing = await this.docker.listNetworks();
      const names = new Set(existing.map((n) => n.Name));
      const bridges: string[] = [];
      for (const [name, internal] of [
        [NETWORK_OPEN, false],
        [NETWORK_CLOSED, true],
      ] as const) {
        if (!names.has(name)) await this.createNetwork(name, internal);
        const net = await this.docker.getNetwork(name).inspect();
        bridges.push(net.Options?.["com.docker.network.bridge.name"] ?? `br-${String(net.Id).slice(0, 12)}`);
      }
      await this.guard(bridges);
    })().catch((err) => {
      this.networks = undefined;
      throw err;
    });
    return this.networks;
  }

  private async createNetwork(name: string, internal: boolean) {
    const created = this.docker.createNetwork({
      Name: name,
      Driver: "bridge",
      Internal: internal,
      Labels: { "holm.network": "1" },
      // Boxes get no IPv6 (firewall.server.ts drops it on these bridges as well).
      EnableIPv6: false,
      Options: { "com.docker.network.bridge.enable_icc": "false" },
    });
    await unlessAlready(409, created);
  }

  async create(launch: BoxLaunch): Promise<{ ref: string }> {
    await this.ensureNetworks();
    const network = launch.network ? NETWORK_OPEN : NETWORK_CLOSED;
    const container = await this.docker.createContainer({
      name: `holm-${launch.boxId}`,
      Image: launch.image,
      Env: Object.entries(launch.env).map(([k, v]) => `${k}=${v}`),
      Labels: { ...launch.labels, [BOX_LABEL]: launch.boxId },
      StopTimeout: 5,
      HostConfig: {
        NetworkMode: network,
        // X, the window manager, x11vnc, Chromium (--no-sandbox), D-Bus, PulseAudio, the agent,
        // exec and the terminal run with no capability; xterm (a catalog app) exits unless it may
        // setgroups() for its pty, hence SETGID, the one kept (ADR 0006). Above all NET_RAW is
        // gone, so no process in a box can forge frames on the bridge.
        CapDrop: ["ALL"],
        CapAdd: boxCapabilities(launch.env),
        SecurityOpt: ["no-new-privileges"],
        PidsLimit: launch.pids,
        Memory: parseBytes(launch.memory),
        MemorySwap: parseBytes(launch.memory), // equal to Memory: no swap on top of the limit
        NanoCpus: launch.cpus ? Math.round(Number(launch.cpus) * 1e9) : undefined,
        ShmSize: 256 * 1024 ** 2,
        // Docker sets these already on networks without IPv6; said here so no engine default matters.
        Sysctls: { "net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1" },
        Mounts: mountsOf(launch),
        LogConfig: { Type: BOX_LOG.driver, Config: { ...BOX_LOG.options } },
        // The server reaches boxes on the bridge; only a box whose spec asks for direct viewer
        // sockets (policy.auth token or password) has one port published, its agent's viewer port.
        PortBindings: launch.directViewer ? { [VIEWER_TCP]: [{ HostIp: launch.directViewer.bind === "any" ? "0.0.0.0" : "127.0.0.1", HostPort: "" }] } : {},
      },
      ...(launch.directViewer && { ExposedPorts: { [VIEWER_TCP]: {} } }),
    });
    return { ref: container.id };
  }

  async directViewerPort(ref: string): Promise<number | undefined> {
    const info = await this.docker.getContainer(ref).inspect();
    const port = Number(info.NetworkSettings?.Ports?.[VIEWER_TCP]?.[0]?.HostPort);
    return Number.isInteger(port) && port > 0 ? port : undefined;
  }

  async putSecrets(ref: string, files: SecretFile[]): Promise<void> {
    await this.docker.getContainer(ref).putArchive(await secretsTar(files), { path: "/" });
  }

  async start(ref: string): Promise<void> {
    await unlessAlready(304, this.docker.getContainer(ref).start());
  }

  async stop(ref: string): Promise<void> {
    await unlessAlready(304, this.docker.getContainer(ref).stop({ t: 5 }));
  }

  async pause(ref: string): Promise<void> {
    const container = this.docker.getContainer(ref);
    for (let attempt = 1; ; attempt++) {
      try {
        await this.freezeGate.freeze(ref, () => container.pause());
        return;
      } catch (err) {
        // A freeze that runc reported as failed can still take a moment later: the next try then
        // hears "already paused" (a CI run, pause-exec-race.test). Paused is what was asked.
        if (statusOf(err) === 409 && /already paused/i.test(String((err as Error).message))) return;
        // On cgroup v1, runc gives up ("unable to freeze") while processes keep appearing in the
        // box (Chromium starting a renderer, a docker exec joining), and thaws it again. A moment
        // later the freeze takes; seen in about 1 pause in 4 right after a box started.
        if (!/unable to freeze/i.test(String((err as Error).message))) throw err;
        if (attempt >= PAUSE_ATTEMPTS) throw new PauseBusyError((err as Error).message);
        if ((await container.inspect()).State?.Paused) return;
        await new Promise((r) => setTimeout(r, 100 * attempt));
      }
    }
  }

  unpause(ref: string): Promise<"resumed" | "restarted"> {
    return resumeUntilRunning(this.docker.getContainer(ref), PAUSE_ATTEMPTS);
  }

  async remove(ref: string): Promise<void> {
    const container = this.docker.getContainer(ref);
    let volume: string | undefined;
    try {
      const info = await container.inspect();
      volume = info.Mounts?.find((m) => m.Type === "volume" && m.Destination === "/root")?.Name;
      await container.remove({ force: true, v: true });
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
    if (volume) await unlessAlready(404, this.docker.getVolume(volume).remove());
  }

  /** Removes a named volume (a browser profile's); missing is not an error (docker-mounts.server.ts). */
  async removeVolume(name: string): Promise<"removed" | "in_use"> {
    return removeNamedVolume(this.docker, name);
  }

  async hasVolume(name: string): Promise<boolean> {
    return volumeExists(this.docker, name);
  }

  async inspect(ref: string): Promise<RuntimeBox> {
    try {
      const info = await this.docker.getContainer(ref).inspect();
      const labels = info.Config.Labels ?? {};
      let state: RuntimeState = "stopped";
      if (info.State.Paused) state = "paused";
      else if (info.State.Running) state = "running";
      const nets = info.NetworkSettings.Networks ?? {};
      const address = nets[NETWORK_OPEN]?.IPAddress || nets[NETWORK_CLOSED]?.IPAddress || undefined;
      const exit = info.State.Status === "exited" && typeof info.State.ExitCode === "number" ? { code: info.State.ExitCode, oom_killed: !!info.State.OOMKilled } : undefined;
      return { ref: info.Id, boxId: labels[BOX_LABEL] ?? "", state, labels, address, ...(exit && { exit }) };
    } catch (err) {
      if (statusOf(err) === 404) return { ref, boxId: "", state: "missing", labels: {} };
      throw err;
    }
  }

  async logs(ref: string, tail: number): Promise<string[]> {
    let raw: Buffer;
    try {
      raw = await this.docker.getContainer(ref).logs({ stdout: true, stderr: true, follow: false, tail });
    } catch (err) {
      if (statusOf(err) === 404) return [];
      throw err;
    }
    return demuxLog(raw)
      .split(/\r\n|\r|\n/)
      .map((l) => l.trimEnd())
      .filter((l) => l !== "")
      .slice(-tail);
  }

  async list(): Promise<RuntimeBox[]> {
    const containers = await this.docker.listContainers({ all: true, filters: { label: [BOX_LABEL] } });
    return containers.map((c) => {
      let state: RuntimeState = "stopped";
      if (c.State === "paused") state = "paused";
      else if (c.State === "running") state = "running";
      const nets = c.NetworkSettings?.Networks ?? {};
      const address = nets[NETWORK_OPEN]?.IPAddress || nets[NETWORK_CLOSED]?.IPAddress || undefined;
      return { ref: c.Id, boxId: c.Labels[BOX_LABEL] ?? "", state, labels: c.Labels, address };
    });
  }

  async shell(ref: string, size: { cols: number; rows: number }): Promise<Shell> {
    const container = this.docker.getContainer(ref);
    // Tags the shell and everything it starts, so close() can hang them up: closing the attach
    // stream alone leaves the exec's processes running (the engine keeps the TTY open).
    const tag = randomBytes(12).toString("hex");
    const { exec, stream } = await this.freezeGate.exec(ref, async () => {
      const exec = await container.exec({
        Cmd: ["bash", "-l"],
        Tty: true,
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Env: ["TERM=xterm-256color", "DISPLAY=:99", `HOLM_SHELL=${tag}`],
      });
      const stream = await exec.start({ hijack: true, stdin: true, Tty: true });
      // Before any await: an 'error' with no listener (an engine that times the socket out
      // meanwhile) would end the server; the shell's exit below hears of it through `close`.
      stream.on("error", () => undefined);
      await started(exec);
      return { exec, stream };
    });
    // A resize is an exec call too (the shim sets the TTY's size), kept apart from a pause.
    const resize = (cols: number, rows: number) => this.freezeGate.exec(ref, () => exec.resize({ h: rows, w: cols }));
    await resize(size.cols, size.rows).catch(() => undefined);
    const exited = new Promise<number | null>((resolve) => {
      let done = false;
      const finish = async () => {
        if (done) return;
        done = true;
        for (let i = 0; i < 20; i++) {
          const info = await exec.inspect().catch(() => undefined);
          if (!info) return resolve(null);
          if (!info.Running) return resolve(info.ExitCode ?? null);
          await new Promise((r) => setTimeout(r, 50));
        }
        resolve(null);
      };
      stream.once("end", finish);
      stream.once("close", finish);
      stream.once("error", finish);
    });
    const hangUp = () =>
      this.freezeGate.exec(ref, async () => {
        const kill = await container.exec({
          Cmd: [
            "sh",
            "-c",
            `for p in /proc/[0-9]*; do grep -qzx 'HOLM_SHELL=${tag}' "$p/environ" 2>/dev/null && kill -HUP "\${p#/proc/}" 2>/dev/null; done; true`,
          ],
        });
        await kill.start({ Detach: true });
        await started(kill);
      });
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      stream.destroy();
      hangUp().catch(() => undefined);
    };
    return { stream, resize, close, exited };
  }
}
