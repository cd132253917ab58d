import Docker from "dockerode";
import { DockerRuntime } from "./docker.server";
import { LoopbackForwards } from "./exec-tunnel.server";
import { x11ImageStatus } from "./image-builder.server";
import type { BuiltImage, ImageRequest, ImageStatus, RuntimeBox } from "./runtime";

// Boxes on another Docker engine, reached over its API with TLS client auth (ADR 0019). The
// containers, networks and lifecycle are DockerRuntime's; what differs is how the server reaches
// a box (exec tunnels behind a loopback address of its own, exec-tunnel.server.ts), how an image
// gets there (built here, then streamed across: there is no registry), and the host's firewall
// rules, which this server cannot set on another host (see `guard`).

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

export class RemoteDockerRuntime extends DockerRuntime {
  private readonly forwards: LoopbackForwards;
  private readonly moving = new Map<string, Promise<void>>();
  private warned = false;

  /** `local` builds the images this engine then receives. */
  constructor(
    name: string,
    readonly host: string,
    tls: TlsSecrets,
    private readonly local: DockerRuntime,
  ) {
    super(remoteClient(host, tls), name);
    this.forwards = new LoopbackForwards(this.docker);
  }

  protected override async guard(): Promise<void> {
    // iptables here would change this host, not the engine's. Said once per runtime, and in ADR 0019.
    if (this.warned) return;
    this.warned = true;
    console.warn(`[holm] runtime ${this.name}: the host firewall rules for box bridges are not set on ${this.host}; set them there (docs/decisions/0019)`);
  }

  private async holds(tag: string): Promise<boolean> {
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
        log(`Sending ${image} to ${this.host}`);
        const started = Date.now();
        const tar = await this.local.docker.getImage(image).get();
        const res = await this.docker.loadImage(tar);
        await new Promise<void>((resolve, reject) => {
          this.docker.modem.followProgress(res, (err: Error | null) => (err ? reject(err) : resolve()), (ev: { stream?: string; error?: string }) => {
            if (ev.error) reject(new Error(ev.error));
            else if (ev.stream?.trim()) log(ev.stream.trim());
          });
        });
        log(`Sent ${image} to ${this.host} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
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

  /** Closes every listener (the runtime was changed or removed). */
  async dispose(): Promise<void> {
    await this.forwards.closeAll();
  }
}
