// Over 400 lines: one Runtime (services, tasks, images to every node, the lifecycle) whose node-level parts are already in swarm-node.server.ts; what is left reads as one piece.
import type Docker from "dockerode";
import { ApiError, unsupported } from "~/utils/api-error.server";
import { parseBytes } from "~/utils/size";
import type { DockerRuntime } from "./docker.server";
import { boundEngine } from "./engine-bound.server";
import { x11ImageStatus } from "./image-builder.server";
import { type TlsSecrets, remoteClient, sendImage } from "./remote-docker.server";
import { CONFIG, ENDED, NodeEngine, SWARM_CLOSED, SWARM_OPEN, type Snapshot, type SwarmNode, type SwarmTask, placementRefusal } from "./swarm-node.server";
import type {
  BoxLaunch,
  BuiltImage,
  EngineImage,
  ImageInfo,
  ImageRequest,
  ImageStatus,
  PlacementNeed,
  Runtime,
  RuntimeBox,
  SecretFile,
  Shell,
} from "./runtime";
import { BOX_LOG, boxCapabilities } from "./runtime";

// Boxes on a Docker Swarm (ADR 0022): each box is a service of one replica, placed by the swarm's
// scheduler from its resource reservations (the box's memory and CPUs) and the runtime's
// placement constraints. The server talks to the manager's API for services, tasks and nodes,
// and to the engine of the node a box's task landed on for everything about its container: the
// exec tunnels behind a loopback address of the box's own, pause, secrets, logs and the terminal,
// exactly as for one remote engine (ADR 0019, RemoteDockerRuntime, one per node). Every node's
// engine is reached at `tcp://<node address>:<engine_port>` with the runtime's TLS credentials.
//
// A desktop lives in its container: a task swarm starts again elsewhere is a new, empty desktop.
// So a box's service never restarts (restart condition `none`), and a box whose task ended (its
// node drained, down, or the task shut down) is reported `unreachable` with the reason, never
// followed to a new container.

const BOX_LABEL = "holm.box";
/** How long a task may wait for a node before the launch gives up with the scheduler's words. */
const UNPLACED_MS = 5_000;
const START_MS = 120_000;
/** How long a node's engine may take to say how a container is, and how long one that did not is left alone. */
const ENGINE_MS = 5_000;
const SILENT_MS = 10_000;

function within<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)))]).finally(() => clearTimeout(timer));
}

export interface SwarmOptions {
  /** The port every node's engine serves its API on (TLS client auth), 2376 unless set. */
  enginePort: number;
  /** Swarm placement constraints every box's service gets, such as `node.labels.holm==boxes`. */
  constraints: string[];
}

function statusOf(err: unknown): number | undefined {
  return (err as { statusCode?: number }).statusCode;
}


export class SwarmRuntime implements Runtime {
  readonly manager: Docker;
  private readonly engines = new Map<string, NodeEngine>();
  private snap: { at: number; value: Promise<Snapshot> } | undefined;
  private networks: Promise<void> | undefined;
  private readonly moving = new Map<string, Promise<void>>();
  /** The container each box's task runs in, once seen, with its node: a task that moves is not followed. */
  private readonly placed = new Map<string, { nodeId: string; container: string }>();
  /** Why a box's task ended, as first seen (a drained node made active again no longer says so). */
  private readonly ended = new Map<string, string>();
  private helper: { image: string; labels: Record<string, string> } | undefined;
  /** Nodes whose engine did not answer lately, and what went wrong. */
  private readonly silent = new Map<string, { at: number; why: string }>();

  constructor(
    readonly name: string,
    readonly host: string,
    private readonly tls: TlsSecrets,
    private readonly local: DockerRuntime,
    private readonly opts: SwarmOptions,
  ) {
    this.manager = boundEngine(remoteClient(host, tls), name);
  }

  // --- the swarm as the manager sees it ---

  /** Nodes and tasks, read at most once a second (a list of 30 boxes asks once). */
  private snapshot(fresh = false): Promise<Snapshot> {
    if (!fresh && this.snap && Date.now() - this.snap.at < 1000) return this.snap.value;
    const value = (async () => {
      const [nodes, tasks] = await Promise.all([this.manager.listNodes() as Promise<SwarmNode[]>, this.manager.listTasks() as Promise<SwarmTask[]>]);
      return { nodes: new Map(nodes.map((n) => [n.ID, n])), tasks };
    })();
    this.snap = { at: Date.now(), value };
    value.catch(() => (this.snap = undefined));
    return value;
  }

  private label(node: SwarmNode | undefined, nodeId?: string): string {
    if (!node) return `node ${nodeId ?? "?"} (no longer in the swarm)`;
    return `node ${node.Description?.Hostname ?? "?"} (${node.ID.slice(0, 12)}, ${node.Status?.Addr ?? "?"})`;
  }

  /** The engine of a node, at its address on the engine port, with the runtime's TLS credentials. */
  private engine(node: SwarmNode): NodeEngine {
    let e = this.engines.get(node.ID);
    const addr = node.Status?.Addr;
    const host = `tcp://${addr && addr !== "0.0.0.0" ? addr : new URL(this.host.replace(/^tcp:/, "https:")).hostname}:${this.opts.enginePort}`;
    if (e && e.host !== host) {
      void e.dispose();
      e = undefined;
    }
    if (!e) {
      e = new NodeEngine(this.name, node.ID, host, this.tls, this.local);
      if (this.helper) e.useHelper(this.helper.image, this.helper.labels);
      this.engines.set(node.ID, e);
    }
    return e;
  }

  /** Nodes new boxes may land on: ready, active, and (workers and managers alike) up. */
  private usable(s: Snapshot): SwarmNode[] {
    return [...s.nodes.values()].filter((n) => n.Status?.State === "ready" && (n.Spec?.Availability ?? "active") === "active");
  }

  async ping(): Promise<boolean> {
    try {
      await within(this.manager.swarmInspect(), ENGINE_MS, "no answer");
      return true;
    } catch {
      return false;
    }
  }

  // --- images: built here, streamed to every node (there is no registry) ---

  private async missingOn(image: string): Promise<NodeEngine[]> {
    const nodes = this.usable(await this.snapshot(true));
    const held = await Promise.all(nodes.map(async (n) => ((await this.engine(n).holds(image)) ? undefined : this.engine(n))));
    return held.filter((e): e is NodeEngine => !!e);
  }

  async imageStatus(req: ImageRequest): Promise<ImageStatus> {
    const { image } = await x11ImageStatus(this.local.docker, req);
    return { image, present: this.moving.has(image) || (await this.missingOn(image)).length === 0 };
  }

  /** Ensures the image here, then streams one export of it to every usable node lacking it. */
  async ensureImage(req: ImageRequest, log: (line: string) => void = () => {}): Promise<BuiltImage> {
    const { image } = await x11ImageStatus(this.local.docker, req);
    let built = false;
    for (;;) {
      const pending = this.moving.get(image);
      if (pending) {
        await pending;
        built = true;
        continue;
      }
      const missing = await this.missingOn(image);
      if (!missing.length) return { image, built };
      // Checked again after the await: another launch may have started the same transfer.
      if (this.moving.has(image)) continue;
      const move = (async () => {
        await this.local.ensureImage(req, log);
        await sendImage(this.local.docker, image, missing.map((e) => ({ docker: e.docker, host: e.host })), log);
      })().finally(() => this.moving.delete(image));
      this.moving.set(image, move);
      await move;
      built = true;
    }
  }

  async imageInfo(image: string): Promise<ImageInfo | undefined> {
    try {
      const info = await this.local.docker.getImage(image).inspect();
      return { size_bytes: info.Size, created_at_ms: Date.parse(info.Created) };
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  }

  async removeImage(image: string): Promise<boolean> {
    const nodes = [...(await this.snapshot(true)).nodes.values()].filter((n) => n.Status?.State === "ready");
    const removed = await Promise.all(nodes.map((n) => this.engine(n).removeImage(image)));
    return removed.some(Boolean);
  }

  /** Prune runs on the built-in runtime only (ADR 0017); the nodes' tags are not listed. */
  async listBoxImages(): Promise<EngineImage[]> {
    return [];
  }

  // --- networks and admission ---

  /** The swarm's two box networks, and every usable node's settings and firewall rules for them. */
  async prepare(): Promise<void> {
    this.networks ??= (async () => {
      const nodes = this.usable(await this.snapshot(true));
      // Config-only networks first: a swarm network made from one needs it on the node it lands on.
      await Promise.all(nodes.map((n) => this.engine(n).ensureNetworks()));
      const have = new Set((await this.manager.listNetworks()).map((n) => n.Name));
      for (const [name, { config }] of Object.entries(CONFIG)) {
        if (have.has(name)) continue;
        try {
          await this.manager.createNetwork({
            Name: name,
            Driver: "bridge",
            Scope: "swarm",
            Internal: name === SWARM_CLOSED,
            // No labels or options of its own: a network made from a config-only one takes none.
            ConfigFrom: { Network: config },
          } as Docker.NetworkCreateOptions);
        } catch (err) {
          if (statusOf(err) !== 409) throw err;
        }
      }
    })().catch((err) => {
      this.networks = undefined;
      throw err;
    });
    await this.networks;
    // A node that joined since: its own settings and rules (idempotent, once per node engine).
    await Promise.all(this.usable(await this.snapshot()).map((n) => this.engine(n).ensureNetworks()));
  }

  /**
   * Refuses a box no usable node can take now (503 `unavailable`, retryable), before it is
   * recorded: the free memory and CPUs of each node are its resources less what the running
   * tasks reserve, the scheduler's own arithmetic. A persistent box is refused: its files would
   * live on one node, and a stopped swarm box does not start again (`stop`).
   */
  async admitLaunch(need: PlacementNeed): Promise<void> {
    if (need.persistent) {
      throw unsupported(`runtime "${this.name}" (swarm) does not keep a box's files: a swarm box is not stopped and started again`);
    }
    const why = placementRefusal(await this.snapshot(true), parseBytes(need.memory), need.cpus ? Number(need.cpus) * 1e9 : 0);
    if (!why) return;
    throw new ApiError(
      "unavailable",
      `no node of the swarm runtime "${this.name}" can take a box of ${need.memory}${need.cpus ? ` and ${need.cpus} CPUs` : ""} now: ${why}; remove a box, add a node, or ask for less`,
      { retryable: true },
    );
  }

  // --- boxes ---

  async create(launch: BoxLaunch): Promise<{ ref: string }> {
    this.helper = { image: launch.image, labels: launch.labels };
    for (const e of this.engines.values()) e.useHelper(launch.image, launch.labels);
    await this.prepare();
    const labels = { ...launch.labels, [BOX_LABEL]: launch.boxId };
    const memory = parseBytes(launch.memory);
    const nanoCpus = launch.cpus ? Math.round(Number(launch.cpus) * 1e9) : undefined;
    const service = (await this.manager.createService({
      Name: `holm-${launch.boxId}`,
      Labels: labels,
      TaskTemplate: {
        ContainerSpec: {
          Image: launch.image,
          Labels: labels,
          Env: Object.entries(launch.env).map(([k, v]) => `${k}=${v}`),
          // As docker.server.ts: no capability but SETGID (and SETUID on Wayland; ADR 0006, 0030).
          CapabilityDrop: ["ALL"],
          CapabilityAdd: boxCapabilities(launch.env),
          StopGracePeriod: 5e9,
          Sysctls: { "net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1" },
          // A service has no shm size: a tmpfs of the same 256 MiB.
          Mounts: [{ Type: "tmpfs", Target: "/dev/shm", TmpfsOptions: { SizeBytes: 256 * 1024 ** 2 } }],
        },
        // The reservation is the limit: the scheduler never puts more boxes on a node than their
        // memory could grow to.
        Resources: {
          Limits: { MemoryBytes: memory, NanoCPUs: nanoCpus, Pids: launch.pids },
          Reservations: { MemoryBytes: memory, NanoCPUs: nanoCpus },
        },
        LogDriver: { Name: BOX_LOG.driver, Options: { ...BOX_LOG.options } },
        // Never started again, here or elsewhere: a new task would be an empty desktop.
        RestartPolicy: { Condition: "none", MaxAttempts: 0 },
        Placement: { Constraints: this.opts.constraints },
        Networks: [{ Target: launch.network ? SWARM_OPEN : SWARM_CLOSED }],
      },
      Mode: { Replicated: { Replicas: 1 } },
    } as unknown as Docker.CreateServiceOptions)) as { id?: string; ID?: string };
    return { ref: String(service.id ?? service.ID) };
  }

  private async tasksOf(ref: string, fresh = false): Promise<{ tasks: SwarmTask[]; snap: Snapshot }> {
    const snap = await this.snapshot(fresh);
    const tasks = snap.tasks.filter((t) => t.ServiceID === ref).sort((a, b) => String(a.CreatedAt).localeCompare(String(b.CreatedAt)));
    return { tasks, snap };
  }

  /**
   * Waits for the box's task to run on a node. One that no node takes (the scheduler says why, in
   * the task's status) fails the launch with those words; so does a task that ends.
   */
  async start(ref: string): Promise<void> {
    if (this.placed.has(ref) || this.ended.has(ref)) {
      throw unsupported(`a box on the swarm runtime "${this.name}" is not started again: swarm would make it a new, empty desktop; create a new box`);
    }
    const began = Date.now();
    let unplacedSince: number | undefined;
    for (;;) {
      // This service's tasks only, four times a second; the nodes from the shared snapshot.
      const [tasks, snap] = await Promise.all([this.manager.listTasks({ filters: { service: [ref] } }) as Promise<SwarmTask[]>, this.snapshot()]);
      tasks.sort((a, b) => String(a.CreatedAt).localeCompare(String(b.CreatedAt)));
      const task = tasks[0];
      const state = task?.Status?.State ?? "new";
      const why = task?.Status?.Err || task?.Status?.Message || state;
      if (task && state === "running" && task.NodeID && task.Status?.ContainerStatus?.ContainerID) {
        this.placed.set(ref, { nodeId: task.NodeID, container: task.Status.ContainerStatus.ContainerID });
        // The shared snapshot may be older than this: the next look at the box reads a fresh one.
        this.snap = undefined;
        return;
      }
      if (task && ENDED.has(state)) {
        throw new Error(`swarm could not start the box's task on ${this.label(snap.nodes.get(task.NodeID ?? ""), task.NodeID)}: ${state}: ${why}`);
      }
      if (state === "pending" || state === "new") {
        unplacedSince ??= Date.now();
        if (Date.now() - unplacedSince > UNPLACED_MS && /no suitable node/i.test(why)) {
          throw new Error(`no node of the swarm runtime "${this.name}" takes the box: ${why}`);
        }
      } else unplacedSince = undefined;
      if (Date.now() - began > START_MS) throw new Error(`the box's swarm task did not run within ${START_MS / 1000} s (${state}: ${why})`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /**
   * Where the box runs now: its node's engine and its container, or why the server cannot reach
   * it. Only the first task counts: a later one is a new container, never the box.
   */
  private async locate(
    ref: string,
  ): Promise<
    | { kind: "missing" }
    | { kind: "starting"; labels: Record<string, string>; boxId: string }
    | { kind: "gone"; labels: Record<string, string>; boxId: string; state: "unreachable" | "stopped"; reason: string }
    | { kind: "here"; labels: Record<string, string>; boxId: string; engine: NodeEngine; container: string; node: SwarmNode }
  > {
    let labels: Record<string, string>;
    try {
      const svc = (await this.manager.getService(ref).inspect()) as { Spec?: { Labels?: Record<string, string> } };
      labels = svc.Spec?.Labels ?? {};
    } catch (err) {
      if (statusOf(err) === 404) return { kind: "missing" };
      throw err;
    }
    const boxId = labels[BOX_LABEL] ?? "";
    const seen = this.placed.get(ref);
    let { tasks, snap } = await this.tasksOf(ref);
    // A snapshot older than what start() saw is read again before anything is concluded from it.
    const known = (list: SwarmTask[]) => list.some((t) => t.Status?.ContainerStatus?.ContainerID === seen?.container);
    if (seen && !known(tasks)) ({ tasks, snap } = await this.tasksOf(ref, true));
    const task = seen ? tasks.find((t) => t.Status?.ContainerStatus?.ContainerID === seen.container) : tasks[0];
    const gone = (state: "unreachable" | "stopped", reason: string) => {
      if (state === "unreachable" && !this.ended.has(ref)) this.ended.set(ref, reason);
      return { kind: "gone" as const, labels, boxId, state, reason: this.ended.get(ref) ?? reason };
    };
    if (this.ended.has(ref)) return gone("unreachable", this.ended.get(ref)!);
    if (!task) {
      if (seen) return gone("unreachable", `swarm no longer has the box's task (it ran in container ${seen.container.slice(0, 12)}); holm does not follow a box to a new container`);
      return { kind: "starting", labels, boxId };
    }
    const node = snap.nodes.get(task.NodeID ?? "");
    const state = task.Status?.State ?? "new";
    const where = this.label(node, task.NodeID);
    const drained = node?.Spec?.Availability === "drain";
    const newer = tasks.find((t) => t !== task && t.Status?.ContainerStatus?.ContainerID);
    if (ENDED.has(state) || task.DesiredState !== "running") {
      if (drained) {
        return gone(
          "unreachable",
          `${where} was drained: swarm shut the box's task down there (${state}); holm does not move a desktop to another node, where it would start empty; remove the box`,
        );
      }
      if (node && node.Status?.State !== "ready") {
        return gone(
          "unreachable",
          `${where} is ${node.Status?.State} (${node.Status?.Message || "it does not answer the manager"}): swarm shut the box's task down (desired state ${task.DesiredState}), so it will not come back with the node, and holm does not start it elsewhere; remove the box`,
        );
      }
      if (state === "failed" || state === "complete") {
        return { kind: "gone", labels, boxId, state: "stopped", reason: `its desktop stopped on ${where} (${state}: ${task.Status?.Err || task.Status?.Message || "exited"})` };
      }
      return gone("unreachable", `swarm ended the box's task on ${where} (${state}: ${task.Status?.Err || task.Status?.Message || "shut down"}); holm does not start it elsewhere`);
    }
    if (newer) return gone("unreachable", `swarm started another task for the box (${newer.ID.slice(0, 12)}); holm does not follow a box to a new container`);
    if (!node) return gone("unreachable", `${where}: the swarm no longer lists the box's node`);
    if (node.Status?.State !== "ready") {
      // A node that comes back brings its box with it (the task never ended): not sticky.
      return { kind: "gone", labels, boxId, state: "unreachable", reason: `${where} is ${node.Status?.State}: ${node.Status?.Message || "it does not answer the manager"}` };
    }
    if (drained) return gone("unreachable", `${where} was drained: swarm is shutting the box's task down; holm does not move a desktop to another node, where it would start empty; remove the box`);
    const container = task.Status?.ContainerStatus?.ContainerID;
    if (state !== "running" || !container) return { kind: "starting", labels, boxId };
    return { kind: "here", labels, boxId, engine: this.engine(node), container, node };
  }

  /** The box's container on its node, or an error that says why there is none. */
  private async container(ref: string): Promise<{ engine: NodeEngine; container: string }> {
    const at = await this.locate(ref);
    if (at.kind === "here") return at;
    if (at.kind === "missing") throw Object.assign(new Error(`no swarm service ${ref}`), { statusCode: 404 });
    if (at.kind === "starting") throw new Error("the box's swarm task is not running yet");
    throw new ApiError("unavailable", at.reason);
  }

  async inspect(ref: string): Promise<RuntimeBox> {
    const at = await this.locate(ref);
    if (at.kind === "missing") {
      await this.release(ref);
      return { ref, boxId: "", state: "missing", labels: {} };
    }
    if (at.kind === "starting") return { ref, boxId: at.boxId, state: "running", labels: at.labels };
    if (at.kind === "gone") {
      await this.release(ref);
      return { ref, boxId: at.boxId, state: at.state, labels: at.labels, reason: at.reason };
    }
    // A node whose engine just failed to answer is not dialled again for a while: a host that
    // vanished does not answer a connection at all, and the reaper asks about each of its boxes.
    const dead = this.silent.get(at.node.ID);
    const unreachable = (why: string): RuntimeBox => ({ ref, boxId: at.boxId, state: "unreachable", labels: at.labels, reason: `the engine of ${this.label(at.node)} at ${at.engine.host} does not answer: ${why}` });
    if (dead && Date.now() - dead.at < SILENT_MS) return unreachable(dead.why);
    let info: RuntimeBox;
    try {
      info = await within(at.engine.inspect(at.container), ENGINE_MS, `no answer within ${ENGINE_MS / 1000} s`);
      this.silent.delete(at.node.ID);
    } catch (err) {
      this.silent.set(at.node.ID, { at: Date.now(), why: (err as Error).message });
      return unreachable((err as Error).message);
    }
    if (info.state === "missing") {
      return { ref, boxId: at.boxId, state: "unreachable", labels: at.labels, reason: `its container is gone from ${this.label(at.node)}` };
    }
    return { ...info, ref, boxId: at.boxId, labels: at.labels };
  }

  /** Closes the box's listeners on the node it was seen on. */
  private async release(ref: string): Promise<void> {
    const seen = this.placed.get(ref);
    const e = seen && this.engines.get(seen.nodeId);
    if (seen && e) await e.closeForwards(seen.container);
  }

  async list(): Promise<RuntimeBox[]> {
    const services = (await this.manager.listServices({ filters: { label: [BOX_LABEL] } })) as { ID: string }[];
    return Promise.all(services.map((s) => this.inspect(s.ID)));
  }

  async putSecrets(ref: string, files: SecretFile[]): Promise<void> {
    const { engine, container } = await this.container(ref);
    await engine.putSecrets(container, files);
  }

  async pause(ref: string): Promise<void> {
    const { engine, container } = await this.container(ref);
    await engine.pause(container);
  }

  async unpause(ref: string): Promise<"resumed" | "restarted" | void> {
    const { engine, container } = await this.container(ref);
    return engine.unpause(container);
  }

  get noStop(): string {
    return `boxes on the swarm runtime "${this.name}" are not stopped (swarm would not start the same desktop again); pause or remove the box`;
  }

  /** Not built: a stopped task is over for swarm, and starting it again would be a new desktop. */
  async stop(_ref: string): Promise<void> {
    throw unsupported(this.noStop);
  }

  async remove(ref: string): Promise<void> {
    const seen = this.placed.get(ref);
    try {
      await this.manager.getService(ref).remove();
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
    // Swarm removes the task's container on its node; said here too, so nothing waits on it.
    const e = seen && this.engines.get(seen.nodeId);
    if (seen && e) await e.remove(seen.container).catch(() => undefined);
    this.placed.delete(ref);
    this.ended.delete(ref);
  }

  async logs(ref: string, tail: number): Promise<string[]> {
    const at = await this.locate(ref).catch(() => undefined);
    if (at?.kind === "here") return at.engine.logs(at.container, tail);
    const { tasks } = await this.tasksOf(ref, true).catch(() => ({ tasks: [] as SwarmTask[] }));
    return tasks.map((t) => `swarm task ${t.ID.slice(0, 12)}: ${t.Status?.State}: ${t.Status?.Err || t.Status?.Message || ""}`).slice(-tail);
  }

  async shell(ref: string, size: { cols: number; rows: number }): Promise<Shell> {
    const { engine, container } = await this.container(ref);
    return engine.shell(container, size);
  }

  /** Closes every node's listeners (the runtime was changed or removed). */
  async dispose(): Promise<void> {
    await Promise.all([...this.engines.values()].map((e) => e.dispose()));
    this.engines.clear();
  }
}
