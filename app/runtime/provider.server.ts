import { z } from "zod";
import { badRequest, unsupported } from "~/utils/api-error.server";
import { validate } from "~/utils/validate.server";
import type { DockerRuntime } from "./docker.server";
import { checkEngineHost, checkTlsPair } from "./engine-host.server";
import { RemoteDockerRuntime } from "./remote-docker.server";
import { normalHostKey, privateKeyProblem, sshClient, sshTarget } from "./ssh-engine.server";
import { SwarmRuntime } from "./swarm.server";
import type { Runtime } from "./runtime";

// Providers: the kinds of runtime an operator can add with POST /v1/runtimes (ADR 0017). A
// provider checks a runtime's fields and secrets, says what boxes on it can do (`can`), and says
// whether this server can launch there. Adding one (a vendor such as e2b) is one more entry in
// PROVIDERS; everything else (store, sealing, routes, refusals) is shared.

/** What boxes on a runtime can do, as this server runs them (GET /v1/runtimes/{name} `can`). */
export interface Capabilities {
  /** Whether this server launches boxes there at all. */
  launch: boolean;
  /** The most screens one box may have (0: none). */
  screens: number;
  wayland: boolean;
  /** `placement.persistent`: the files outlive a stop. */
  persistent: boolean;
  /** `placement.profile`: named browser profiles. */
  profile: boolean;
  /** The Pages routes (Chrome DevTools in the box). */
  pages: boolean;
  /** Screen recordings (the `video` feature). */
  recording: boolean;
  pause: boolean;
  stop: boolean;
  /** Building the box image before need (POST /v1/runtimes/{name}/image). */
  images: boolean;
}

export type Fields = Record<string, unknown>;
export type Secrets = Record<string, string>;

export interface RuntimeProvider {
  readonly name: string;
  /** The names of the secrets it takes; any other name is refused. */
  readonly secretNames: readonly string[];
  /**
   * Checks a whole runtime (fields and secrets together) and returns its fields in normal form.
   * Throws a 400 whose message names fields and secret names, never a secret's value.
   */
  check(fields: Fields, secrets: Secrets): Fields;
  /** What boxes on a runtime with these fields can do on this server. */
  can(fields: Fields): Capabilities;
  /** Why this server cannot launch a box there yet; undefined when it can. */
  notLaunchable(fields: Fields): string | undefined;
  /**
   * The Runtime for a stored runtime this server launches on (`notLaunchable` is undefined);
   * `local` is the built-in engine (it builds images). The secrets stay in the Runtime's memory.
   */
  open(name: string, fields: Fields, secrets: Secrets, local: DockerRuntime): Runtime;
}

const NOTHING: Capabilities = {
  launch: false,
  screens: 0,
  wayland: false,
  persistent: false,
  profile: false,
  pages: false,
  recording: false,
  pause: false,
  stop: false,
  images: false,
};

/** The built-in runtime: the engine on this machine's socket, as box-launch runs it. */
export const LOCAL_DOCKER_CAN: Capabilities = {
  launch: true,
  screens: 8,
  // Headless sway (ADR 0030); the same image and launch on another engine or a Swarm node.
  wayland: true,
  persistent: true,
  profile: true,
  pages: true,
  recording: true,
  pause: true,
  stop: true,
  images: true,
};

// tcp://host:port (TLS client auth) or ssh://[user@]host[:port] (a key, the host's key pinned): another Docker engine.
// The shape only: checkEngineHost takes it apart (port range, a real name or address).
const HOST_RE = /^(tcp|ssh):\/\/(?:[A-Za-z0-9._-]{1,64}@)?(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?\/?$/;

const DockerFields = z.strictObject({
  host: z.string().max(400).regex(HOST_RE, "tcp://HOST:PORT or ssh://[USER@]HOST[:PORT]"),
  // Public, so a field (shown on GET, where an administrator can check it against the host's).
  // null: none (a PATCH merges fields, so moving an engine to tcp:// sends `host_key: null`).
  host_key: z.string().max(4000).nullable().optional(),
});

const TLS_SECRETS = ["ca", "cert", "key"] as const;
const SSH_SECRETS = ["ssh_key", "ssh_passphrase"] as const;

const HOST_KEY_HELP =
  "the host's public key (a line of `ssh-keyscan -t ed25519 HOST`, or its /etc/ssh/ssh_host_ed25519_key.pub) or its SHA256: fingerprint (`ssh-keygen -lf` of that file)";

const docker: RuntimeProvider = {
  name: "docker",
  secretNames: [...TLS_SECRETS, ...SSH_SECRETS],
  check(fields, secrets) {
    // Wrapped so a message names the field as the body has it: `fields.host`.
    const f = validate(z.strictObject({ fields: DockerFields }), { fields }, "body").fields;
    const tls = f.host.startsWith("tcp://");
    for (const name of Object.keys(secrets)) {
      if (!this.secretNames.includes(name)) {
        throw badRequest(`secrets: unknown key "${name}"; a docker runtime takes ${this.secretNames.join(", ")}`);
      }
      if (tls && !(TLS_SECRETS as readonly string[]).includes(name)) throw badRequest(`secrets.${name}: a tcp:// engine takes "ca", "cert" and "key"`);
      if (!tls && !(SSH_SECRETS as readonly string[]).includes(name)) throw badRequest(`secrets.${name}: an ssh:// engine takes "ssh_key" and "ssh_passphrase"`);
    }
    const host = checkEngineHost(f.host, ["tcp", "ssh"]);
    if (tls) {
      if (f.host_key != null) throw badRequest("fields.host_key: only an ssh:// engine takes a host key (set it to null)");
      // An engine on plain tcp answers anyone who reaches it as root: TLS client auth or nothing.
      const missing = TLS_SECRETS.filter((n) => !secrets[n]);
      if (missing.length) throw badRequest(`secrets: a tcp:// engine needs TLS client auth; missing ${missing.join(", ")}`);
      checkTlsPair({ ca: secrets.ca!, cert: secrets.cert!, key: secrets.key! });
      return { host };
    }
    // ssh://: the host proves itself with the key pinned here, or nothing is sent to it. There is
    // no "trust on first use": an unpinned host is refused (ADR 0019).
    if (f.host_key == null) throw badRequest(`fields.host_key: an ssh:// engine needs its host key pinned: ${HOST_KEY_HELP}`);
    const hostKey = normalHostKey(f.host_key);
    if (!hostKey) throw badRequest(`fields.host_key: not ${HOST_KEY_HELP}`);
    if (!secrets.ssh_key) throw badRequest("secrets: an ssh:// engine needs ssh_key (a private key the host's authorized_keys accepts)");
    const problem = privateKeyProblem(secrets.ssh_key, secrets.ssh_passphrase);
    if (problem) throw badRequest(problem);
    return { host, host_key: hostKey };
  },
  can(fields) {
    // The same boxes as the built-in engine, reached through exec tunnels (ADR 0019); browser
    // profiles are kept on the built-in engine only (profile.server.ts).
    return this.notLaunchable(fields) ? NOTHING : { ...LOCAL_DOCKER_CAN, profile: false };
  },
  notLaunchable(fields) {
    if (String(fields.host).startsWith("tcp://")) return undefined;
    // A runtime stored before host keys were pinned: launching there would trust any host.
    if (typeof fields.host_key !== "string" || !normalHostKey(fields.host_key)) {
      return `an ssh:// engine needs fields.host_key: ${HOST_KEY_HELP}`;
    }
    return undefined;
  },
  open(name, fields, secrets, local) {
    const why = this.notLaunchable(fields);
    if (why) throw unsupported(`runtime "${name}": ${why}`);
    const host = String(fields.host);
    if (host.startsWith("tcp://")) return new RemoteDockerRuntime(name, host, { ca: secrets.ca!, cert: secrets.cert!, key: secrets.key! }, local);
    if (!secrets.ssh_key) throw unsupported(`runtime "${name}": secrets.ssh_key is not set`);
    const { docker: client, agent } = sshClient(sshTarget(host, secrets, normalHostKey(String(fields.host_key))!));
    return new RemoteDockerRuntime(name, host, client, local, () => agent.close());
  },
};

/** What boxes on a swarm can do (ADR 0022): no stop (a task is not started again), no persistent files. */
export const SWARM_CAN: Capabilities = { ...LOCAL_DOCKER_CAN, persistent: false, profile: false, stop: false };

const SwarmFields = z.strictObject({
  host: z.string().max(400).regex(/^tcp:\/\/(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?\/?$/, "tcp://HOST:PORT (a manager's engine)"),
  engine_port: z.number().int().min(1).max(65535).optional(),
  constraints: z.array(z.string().min(3).max(200).regex(/^[A-Za-z0-9_.-]+\s*(==|!=)\s*[^\s].*$/, "a swarm constraint such as node.labels.holm==boxes")).max(20).optional(),
});

/**
 * A Docker Swarm (ADR 0022): `fields.host` is a manager's engine (`tcp://`, TLS client auth);
 * every node's engine answers on `engine_port` (2376) with the same credentials; `constraints`
 * go into every box's service.
 */
const swarm: RuntimeProvider = {
  name: "swarm",
  secretNames: TLS_SECRETS,
  check(fields, secrets) {
    const f = validate(z.strictObject({ fields: SwarmFields }), { fields }, "body").fields;
    const host = checkEngineHost(f.host, ["tcp"]);
    for (const name of Object.keys(secrets)) {
      if (!this.secretNames.includes(name)) throw badRequest(`secrets: unknown key "${name}"; a swarm runtime takes ${this.secretNames.join(", ")}`);
    }
    const missing = TLS_SECRETS.filter((n) => !secrets[n]);
    if (missing.length) throw badRequest(`secrets: a swarm's engines need TLS client auth; missing ${missing.join(", ")}`);
    checkTlsPair({ ca: secrets.ca!, cert: secrets.cert!, key: secrets.key! });
    return {
      host,
      engine_port: f.engine_port ?? 2376,
      ...(f.constraints?.length ? { constraints: f.constraints.map((c) => c.replace(/\s+/g, "")) } : {}),
    };
  },
  can() {
    return SWARM_CAN;
  },
  notLaunchable() {
    return undefined;
  },
  open(name, fields, secrets, local) {
    return new SwarmRuntime(name, String(fields.host), { ca: secrets.ca!, cert: secrets.cert!, key: secrets.key! }, local, {
      enginePort: Number(fields.engine_port ?? 2376),
      constraints: Array.isArray(fields.constraints) ? fields.constraints.map(String) : [],
    });
  },
};

export const PROVIDERS: ReadonlyMap<string, RuntimeProvider> = new Map([
  [docker.name, docker],
  [swarm.name, swarm],
]);

/** The provider by name, or 400 `unsupported` listing the ones there are. */
export function provider(name: string): RuntimeProvider {
  const found = PROVIDERS.get(name);
  if (!found) {
    throw unsupported(`provider "${name}" is not supported on this server; providers: ${[...PROVIDERS.keys()].join(", ")}`);
  }
  return found;
}
