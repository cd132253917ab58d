import type Docker from "dockerode";
import type { DockerRuntime } from "./docker.server";
import { RemoteDockerRuntime, type TlsSecrets } from "./remote-docker.server";

// The parts of a swarm runtime (swarm.server.ts, ADR 0022) that are about one node: what the
// manager says of nodes and tasks, and the engine of one node, through which the server reaches
// the boxes on it.

/** The swarm-scoped networks boxes join (a bridge on each node, made from the node's config-only network). */
export const SWARM_OPEN = "holm-swarm";
export const SWARM_CLOSED = "holm-swarm-internal";
/** Each node's own settings for them (config-only networks), and the bridges they become there. */
export const CONFIG = { [SWARM_OPEN]: { config: "holm-swarm-open-cfg", bridge: "holmsw-open" }, [SWARM_CLOSED]: { config: "holm-swarm-closed-cfg", bridge: "holmsw-closed" } };
/** Task states after which swarm does nothing more with the task. */
export const ENDED = new Set(["complete", "shutdown", "failed", "rejected", "orphaned", "remove"]);


export interface SwarmNode {
  ID: string;
  Description?: { Hostname?: string; Resources?: { NanoCPUs?: number; MemoryBytes?: number } };
  Spec?: { Availability?: string; Role?: string; Labels?: Record<string, string> };
  Status?: { State?: string; Addr?: string; Message?: string };
  ManagerStatus?: { Addr?: string };
}

export interface SwarmTask {
  ID: string;
  ServiceID: string;
  NodeID?: string;
  CreatedAt?: string;
  DesiredState?: string;
  Spec?: { Resources?: { Reservations?: { MemoryBytes?: number; NanoCPUs?: number } } };
  Status?: { State?: string; Message?: string; Err?: string; ContainerStatus?: { ContainerID?: string } };
}

export interface Snapshot {
  nodes: Map<string, SwarmNode>;
  tasks: SwarmTask[];
}

/** The engine of one node: a remote engine whose boxes join the swarm's networks. */
export class NodeEngine extends RemoteDockerRuntime {
  private ready: Promise<void> | undefined;

  constructor(
    name: string,
    readonly nodeId: string,
    host: string,
    tls: TlsSecrets,
    local: DockerRuntime,
  ) {
    super(name, host, tls, local);
  }

  /** The image the firewall helper runs from (one the node holds) and the labels it carries. */
  useHelper(image: string, labels: Record<string, string>): void {
    this.helperImage = image;
    this.helperLabels = labels;
  }

  /**
   * The node's settings for the swarm's box networks (no traffic between boxes, a bridge name we
   * know), and the host's rules for those bridges (ADR 0006), put in by that host's iptables.
   */
  override ensureNetworks(): Promise<void> {
    this.ready ??= (async () => {
      for (const { config, bridge } of Object.values(CONFIG)) {
        try {
          await this.docker.createNetwork({
            Name: config,
            ConfigOnly: true,
            Labels: { "holm.network": "1" },
            Options: { "com.docker.network.bridge.enable_icc": "false", "com.docker.network.bridge.name": bridge },
          } as Docker.NetworkCreateOptions);
        } catch (err) {
          if ((err as { statusCode?: number }).statusCode !== 409) throw err;
        }
      }
      await this.guard(Object.values(CONFIG).map((c) => c.bridge));
    })().catch((err) => {
      this.ready = undefined;
      throw err;
    });
    return this.ready;
  }
}

const GIB = 1024 ** 3;
const gib = (b: number) => `${(b / GIB).toFixed(1)} GiB`;

/**
 * Why no usable node can take a box reserving `mem` bytes and `cpus` nano-CPUs, in words; undefined
 * when one can. A node's free share is its resources less what its running tasks reserve: the
 * scheduler's own arithmetic.
 */
export function placementRefusal(s: Snapshot, mem: number, cpus: number): string | undefined {
  const words: string[] = [];
  for (const n of s.nodes.values()) {
    const name = `${n.Description?.Hostname ?? "?"} (${n.ID.slice(0, 12)})`;
    const state = n.Status?.State ?? "unknown";
    const availability = n.Spec?.Availability ?? "active";
    if (state !== "ready" || availability !== "active") {
      words.push(`${name} is ${state !== "ready" ? state : availability === "drain" ? "drained" : availability}`);
      continue;
    }
    let memFree = n.Description?.Resources?.MemoryBytes ?? 0;
    let cpuFree = n.Description?.Resources?.NanoCPUs ?? 0;
    for (const t of s.tasks) {
      if (t.NodeID !== n.ID || t.DesiredState !== "running" || ENDED.has(t.Status?.State ?? "")) continue;
      memFree -= t.Spec?.Resources?.Reservations?.MemoryBytes ?? 0;
      cpuFree -= t.Spec?.Resources?.Reservations?.NanoCPUs ?? 0;
    }
    if (memFree >= mem && cpuFree >= cpus) return undefined;
    words.push(`${name} has ${gib(Math.max(0, memFree))}${cpus ? ` and ${(Math.max(0, cpuFree) / 1e9).toFixed(1)} CPUs` : ""} free`);
  }
  return words.join("; ") || "the swarm has no nodes";
}
