import { PassThrough } from "node:stream";
import Docker from "dockerode";
import { DockerRuntime } from "./docker.server";
import { boundEngine } from "./engine-bound.server";
import { LoopbackForwards } from "./exec-tunnel.server";
import { guardScript } from "./firewall.server";
import { x11ImageStatus } from "./image-builder.server";
import type { BoxLaunch, BuiltImage, ImageRequest, ImageStatus, RuntimeBox } from "./runtime";

// Boxes on another Docker engine, reached over its API with TLS client auth, or over ssh
// (ssh-engine.server.ts) (ADR 0019). The
// containers, networks and lifecycle are DockerRuntime's; what differs is how the server reaches
// a box (exec tunnels behind a loopback address of its own, exec-tunnel.server.ts), how an image
// gets there (built here, then streamed across: there is no registry), and how the host's
// firewall rules for the box bridges are set: by that host's own iptables, from a short-lived
// helper container with NET_ADMIN on that host (`guard`).

export interface TlsSecrets {
  ca: string;
  cert: string;
  key: string;
}

/** A dockerode client for `tcp://HOST:PORT` with TLS client auth. */
export function remoteClient(host: string, tls: TlsSecrets): Docker {
  const u = new URL(host.replace(/^tcp:/, "https:"));
  return new Docker({
    protocol: "https",
    host: u.hostname.replace(/^\[|\]$/g, ""),
    port: Number(u.port || 2376),
    ca: tls.ca,
    cert: tls.cert,
    key: tls.key,
  });
}

/**
 * Streams `image` from `local` into every target engine: one export, its bytes copied to each
 * target's load as they come (there is no registry; a swarm's nodes all need the image).
 */
export async function sendImage(local: Docker, image: string, targets: { docker: Docker; host: string }[], log: (line: string) => void): Promise<void> {
  if (!targets.length) return;
  const where = targets.map((t) => t.host).join(", ");
  log(`Sending ${image} to ${where}`);
  const started = Date.now();
  const tar = (await local.getImage(image).get()) as NodeJS.ReadableStream;
  const copies = targets.map(() => new PassThrough({ highWaterMark: 4 * 1024 * 1024 }));
  // The slowest engine sets the pace: the export pauses while any copy is full.
  for (const c of copies) tar.pipe(c);
  tar.on("error", (err) => copies.forEach((c) => c.destroy(err as Error)));
  try {
    await Promise.all(
      targets.map(async (t, i) => {
        const res = await t.docker.loadImage(copies[i]!);
        await new Promise<void>((resolve, reject) => {
          t.docker.modem.followProgress(res, (err: Error | null) => (err ? reject(err) : resolve()), (ev: { stream?: string; error?: string }) => {
            if (ev.error) reject(new Error(ev.error));
            else if (ev.stream?.trim()) log(ev.stream.trim());
          });
        });
      }),
    );
  } catch (err) {
    // One target failed (or did not answer): the export ends for all, or it stays open on the
    // local engine, paused on a copy nobody reads.
    for (const c of copies) tar.unpipe(c);
    copies.forEach((c) => c.destroy());
    (tar as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
    throw err;
  }
  log(`Sent ${image} to ${where} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

export class RemoteDockerRuntime extends DockerRuntime {
  private readonly forwards: LoopbackForwards;
  private readonly moving = new Map<string, Promise<void>>();
  /** An image the engine holds (the last one a box was created from): the helper runs it. */
  protected helperImage: string | undefined;
  protected helperLabels: Record<string, string> = {};

  /**
   * `engine`: TLS client credentials for a tcp:// host, or a client made already (an ssh://
   * host's, whose `closeTransport` ends its SSH connections). `local` builds the images this
   * engine then receives.
   */
  constructor(
    name: string,
    readonly host: string,
    engine: TlsSecrets | Docker,
    private readonly local: DockerRuntime,
    private readonly closeTransport: () => void = () => {},
  ) {
    // Every call bounded: a frozen engine answers 503 naming the runtime, never hangs a caller.
    super(boundEngine(engine instanceof Docker ? engine : remoteClient(host, engine), name), name);
    this.forwards = new LoopbackForwards(this.docker, this.freezeGate);
  }

  override async create(launch: BoxLaunch): Promise<{ ref: string }> {
    this.helperImage = launch.image;
    this.helperLabels = launch.labels;
    return super.create(launch);
  }

  /**
   * iptables here would change this host, not the engine's: the rules (firewall.server.ts) run on
   * that host through `chroot /host` in a helper container on its network namespace. The
   * server holds that power already (the Docker API is root there); the helper only uses it.
   */
  protected override async guard(bridges: string[]): Promise<void> {
    if (!this.helperImage) throw new Error(`runtime ${this.name}: the box bridges' firewall rules need an image on ${this.host} first`);
    const helper = await this.docker.createContainer({
      Image: this.helperImage,
      Entrypoint: ["chroot"],
      Cmd: ["/host", "sh", "-c", guardScript(bridges)],
      Labels: { ...this.helperLabels, "holm.helper": "firewall" },
      // Not --privileged: iptables needs these two capabilities and nothing else.
      HostConfig: { CapAdd: ["NET_ADMIN", "NET_RAW"], NetworkMode: "host", Binds: ["/:/host"] },
    });
    try {
      await helper.start();
      const { StatusCode } = (await helper.wait()) as { StatusCode: number };
      if (StatusCode !== 0) {
        const out = (await helper.logs({ stdout: true, stderr: true, tail: 5 })).toString("utf8").replace(/[^\x20-\x7e\n]/g, "").trim();
        throw new Error(`iptables on ${this.host} refused the box bridges' rules (exit ${StatusCode}): ${out.slice(-500)}`);
      }
    } finally {
      await helper.remove({ force: true }).catch(() => undefined);
    }
  }

  /** Whether the engine holds the image `tag`. */
  async holds(tag: string): Promise<boolean> {
    try {
      await this.docker.getImage(tag).inspect();
      return true;
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return false;
      throw err;
    }
  }

  override async imageStatus(req: ImageRequest): Promise<ImageStatus> {
    const { image } = await x11ImageStatus(this.local.docker, req);
    return { image, present: this.moving.has(image) || (await this.holds(image)) };
  }

  /** Ensures the image here (the builder), then streams it across unless the engine has it. */
  override async ensureImage(req: ImageRequest, log: (line: string) => void = () => {}): Promise<BuiltImage> {
    const { image } = await x11ImageStatus(this.local.docker, req);
    if (!this.moving.has(image) && (await this.holds(image))) return { image, built: false };
    let move = this.moving.get(image);
    if (!move) {
      move = (async () => {
        await this.local.ensureImage(req, log);
        await sendImage(this.local.docker, image, [{ docker: this.docker, host: this.host }], log);
      })().finally(() => this.moving.delete(image));
      this.moving.set(image, move);
    }
    await move;
    return { image, built: true };
  }

  /** The box's own loopback address here, with its listeners up while it runs. */
  private async reachable(box: RuntimeBox): Promise<RuntimeBox> {
    if (box.state === "missing" || !box.boxId) return box;
    if (box.state === "stopped") {
      await this.forwards.close(box.ref);
      return { ...box, address: undefined };
    }
    return { ...box, address: await this.forwards.ensure(box.ref, `${this.name}\u0000${box.boxId}`) };
  }

  override async inspect(ref: string): Promise<RuntimeBox> {
    const box = await super.inspect(ref);
    if (box.state === "missing") await this.forwards.close(ref);
    return this.reachable(box);
  }

  override async list(): Promise<RuntimeBox[]> {
    return Promise.all((await super.list()).map((b) => this.reachable(b)));
  }

  override async stop(ref: string): Promise<void> {
    await super.stop(ref);
    await this.forwards.close(ref);
  }

  override async remove(ref: string): Promise<void> {
    await this.forwards.close(ref);
    await super.remove(ref);
  }

  /** Closes the listeners of one box (a swarm box whose node went away). */
  closeForwards(ref: string): Promise<void> {
    return this.forwards.close(ref);
  }

  /** Closes every listener (the runtime was changed or removed), then the connections to the engine. */
  async dispose(): Promise<void> {
    await this.forwards.closeAll();
    this.closeTransport();
  }
}
