import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { type ConfigFileResult, loadConfigFile } from "./config-file.server";
import { MIN_BOX_MEMORY, SIZE_RE, parseBytes } from "./size";

// Validated once at boot so a bad setting stops the server with a clear message instead
// of surfacing as a strange failure later.
const AddrSchema = z
  .string()
  .regex(/^(\[[0-9a-fA-F:]+\]|[^:\s]+):\d{1,5}$/, "expected HOST:PORT, such as 127.0.0.1:8080")
  .transform((value) => {
    const at = value.lastIndexOf(":");
    const host = value.slice(0, at).replace(/^\[|\]$/g, "");
    const port = Number(value.slice(at + 1));
    return { host, port };
  })
  .refine((a) => a.port >= 0 && a.port <= 65535, "port out of range");

const SizeSchema = z
  .string()
  .regex(SIZE_RE, 'a size such as "2g" or "512m"')
  // zod runs every check even after the regex failed: a bad size must not reach parseBytes.
  .refine((v) => !SIZE_RE.test(v) || parseBytes(v) >= parseBytes(MIN_BOX_MEMORY), `at least ${MIN_BOX_MEMORY}: the desktop needs that much`);

const EnvSchema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  HOLM_SERVER_ADDR: AddrSchema.prefault("127.0.0.1:8080"),
  HOLM_SERVER_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  /**
   * `memory`: SQLite in memory (lost at a restart); `local`: a SQLite file in HOLM_STATE_DIR;
   * `postgres`: the PostgreSQL database HOLM_DATABASE_URL names (docs/decisions/0020), which
   * several servers may share.
   */
  HOLM_STORAGE_BACKEND: z.enum(["memory", "local", "postgres"]).default("memory"),
  /** The PostgreSQL database of HOLM_STORAGE_BACKEND=postgres, `postgres://user:pass@host:port/db`. */
  HOLM_DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\/[^\s]+$/, "a PostgreSQL URL such as postgres://holm:secret@127.0.0.1:5432/holm")
    .optional(),
  /** Connections to PostgreSQL this server keeps open at most (HOLM_STORAGE_BACKEND=postgres). */
  HOLM_DATABASE_POOL: z.coerce.number().int().min(1).max(200).default(10),
  /**
   * A Redis several holm servers share, `redis://:password@host:port` (docs/decisions/0021): news
   * of takeovers and access changes, batch locks, socket.io rooms. Unset: one server.
   */
  HOLM_REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\/[^\s]+$/, "a Redis URL such as redis://:secret@127.0.0.1:6379")
    .optional(),
  HOLM_STATE_DIR: z.string().min(1).default(path.join(os.homedir(), ".holm")),
  HOLM_SERVER_REAP_SECS: z.coerce.number().int().min(1).max(86_400).default(30),
  /**
   * `internal`: the server reaps, prunes and runs queued jobs by itself. `external`: a scheduler
   * calls /v1/jobs/reap, /v1/jobs/prune and /v1/jobs/run instead (a server that cannot keep a loop).
   */
  HOLM_SERVER_SCHEDULE: z.enum(["internal", "external"]).default("internal"),
  /** How often an `internal` schedule prunes old frames, trace entries and events. */
  HOLM_SERVER_PRUNE_SECS: z.coerce.number().int().min(1).max(604_800).default(3600),
  /**
   * How long an MCP tool call waits for a paused box to resume before it answers `timeout:`
   * (retryable): under the MCP SDK client's default 60 s request timeout, so the agent sees it.
   */
  HOLM_MCP_PAUSED_WAIT_SECS: z.coerce.number().int().min(1).max(600).default(50),
  /** How long a takeover outlives its person's last control connection. */
  HOLM_TAKEOVER_GRACE_SECS: z.coerce.number().int().min(1).max(3600).default(60),
  /** Viewer sockets one screen takes through this server (half of it for one issuer); more are refused 503. */
  HOLM_VIEWERS_PER_SCREEN: z.coerce.number().int().min(1).max(10_000).default(64),
  /**
   * CDP sockets one screen takes through this server (half of it for one issuer), and one issuer
   * across every box; more are refused 503 (server/cdp-limits.ts).
   */
  HOLM_CDP_SOCKETS_PER_SCREEN: z.coerce.number().int().min(1).max(10_000).default(16),
  HOLM_CDP_SOCKETS_PER_ISSUER: z.coerce.number().int().min(1).max(100_000).default(32),
  /** The largest CDP message through the proxy, each way, in MiB; a longer one closes its socket 1009. */
  HOLM_CDP_MESSAGE_MIB: z.coerce.number().int().min(1).max(256).default(32),
  /**
   * What every CDP socket of this process together may hold waiting to be written, in MiB; past
   * it the socket furthest behind is closed 1013 (server/cdp-limits.ts).
   */
  HOLM_CDP_BUFFER_MIB: z.coerce.number().int().min(1).max(1_048_576).default(256),
  /** Boxes that may be starting at the same time; more wait in `starting`. */
  HOLM_LAUNCH_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  /**
   * How long a remote engine (tcp://, ssh://, swarm) may take to answer a call (its headers; a
   * stream's data is not timed) before the call fails `503 unavailable` naming the runtime.
   */
  HOLM_ENGINE_TIMEOUT_SECS: z.coerce.number().int().min(1).max(600).default(15),
  HOLM_SERVER_JOBS: z.enum(["inline", "queue"]).default("inline"),
  HOLM_PUBLIC_URL: z.url().optional(),
  HOLM_SECRET_KEY: z.string().min(32, "must be at least 32 characters").optional(),
  CRON_SECRET: z.string().min(16).optional(),
  /**
   * More host names this server answers to (the Host check of server/http-edge.ts), with
   * HOLM_PUBLIC_URL's port, and the only names a box's `policy.advertise` may put in its viewer
   * URLs: the administrator widens the DNS-rebinding guard, never a box spec.
   */
  HOLM_ADVERTISE_HOSTS: z
    .string()
    .regex(/^[a-z0-9.-]+(,[a-z0-9.-]+)*$/i, "host names separated by commas")
    .transform((v) => v.toLowerCase().split(","))
    .optional(),
  HOLM_DOCKER_SOCKET: z.string().default("/var/run/docker.sock"),
  /** Extra labels for every box container, `k=v,k2=v2` (tests find their boxes by them). */
  HOLM_BOX_LABELS: z
    .string()
    .regex(/^([a-z0-9.\-_]+=[^,=]*)(,[a-z0-9.\-_]+=[^,=]*)*$/, "k=v pairs separated by commas")
    .optional(),
  /** Where the box image sources and the agent bundle are; the repo root by default. */
  HOLM_ROOT: z.string().default(process.cwd()),
  /** Memory of a box whose placement names none (swap included: a box gets no swap beyond it). */
  HOLM_BOX_MEMORY: SizeSchema.default("2g"),
  /** The most `placement.memory` may ask for. */
  HOLM_BOX_MEMORY_MAX: SizeSchema.default("8g"),
  /** Processes and threads one box may hold: a fork bomb stops there. An idle box holds ~130. */
  HOLM_BOX_PIDS: z.coerce.number().int().min(256).max(65_536).default(1024),
  /**
   * The most a browser profile may hold (ADR 0025), as a size ("2g") or bytes: one measured over it
   * when its last box let it go is refused at launch (409) until it is deleted.
   */
  HOLM_PROFILE_MAX_BYTES: z.string().regex(SIZE_RE, 'a size such as "2g" or "500m", or bytes').default("2g").transform((v) => (SIZE_RE.test(v) ? parseBytes(v) : 0)),
  /**
   * Admission (app/models/capacity.server.ts, ADR 0016): the most boxes that may hold a
   * container on this server at once (starting, ready, paused, unreachable); 0: no count limit,
   * only memory decides. Past it, POST /v1/boxes answers 503 `unavailable`, retryable.
   */
  HOLM_MAX_LIVE_BOXES: z.coerce.number().int().min(0).max(100_000).default(0),
  /** Host memory a new box needs free to be admitted (an idle box uses about 200 MiB). */
  HOLM_BOX_ADMIT_MEMORY: z.string().regex(SIZE_RE, "a size such as 300m or 1g").default("300m"),
  /** Host memory no box may take: kept for the server, the engine and the host. */
  HOLM_HOST_MEMORY_RESERVE: z.string().regex(SIZE_RE, "a size such as 512m or 1g").default("1g"),
  /**
   * Disk space kept free on the engine's root and HOLM_STATE_DIR (ADR 0034), as a size or bytes; "0"
   * turns the watch off. Below it new boxes are refused 503 `unavailable` and the running box that
   * wrote the most is stopped.
   */
  HOLM_DISK_RESERVE: z
    .string()
    .refine((v) => v === "0" || SIZE_RE.test(v), 'a size such as "4g" or "500m", bytes, or "0" (no watch)')
    .default("4g")
    .transform((v) => (SIZE_RE.test(v) ? parseBytes(v) : 0)),
  /** Live boxes (not removed, not failed) one workspace may hold. The server token has no limit. */
  HOLM_WORKSPACE_BOXES: z.coerce.number().int().min(0).max(10_000).default(10),
  /** New images one workspace may have the server build in 24 hours; 0: only images that exist. */
  /**
   * The warm pool: boxes kept ready, unowned, per spec (app/models/pool.server.ts).
   * `default=4` (the spec an empty POST /v1/boxes gets) or `<spec digest>=N`, comma separated.
   */
  HOLM_POOL: z
    .string()
    .regex(
      /^(default|[0-9a-f]{64})=[0-9]{1,3}(,(default|[0-9a-f]{64})=[0-9]{1,3})*$/,
      'entries such as "default=4" or "<64-hex spec digest>=2", separated by commas',
    )
    .transform((v) => v.split(",").map((kv) => ({ key: kv.split("=")[0]!, size: Number(kv.split("=")[1]) })))
    .refine((l) => new Set(l.map((e) => e.key)).size === l.length, "each spec may appear once")
    .refine((l) => l.every((e) => e.size <= 100), "at most 100 boxes per spec")
    .optional(),
  /** The memory all pool boxes may hold together (each counts its memory limit). */
  HOLM_POOL_MAX_MEMORY: SizeSchema.default("8g"),
  HOLM_WORKSPACE_IMAGE_BUILDS: z.coerce.number().int().min(0).max(10_000).default(3),
  /**
   * How old a box image of an earlier build (a tag no spec gets today, no box uses) must be before
   * prune removes it: a number with `s`, `m`, `h` or `d` (docs/decisions/0017). `0`: never.
   */
  HOLM_IMAGE_PRUNE_AFTER: z
    .string()
    .regex(/^\d+[smhd]?$/, 'a duration such as "3d", "12h" or "0" (never)')
    .default("3d")
    .transform((v) => {
      const n = Number(/^\d+/.exec(v)![0]);
      const unit = { s: 1, m: 60, h: 3600, d: 86_400 }[v.slice(-1)] ?? 1;
      return n * unit * 1000;
    }),
  /**
   * Webhooks (docs/decisions/0018): `1` lets targets on loopback, link-local and private ranges
   * through (an administrator's choice, say for a receiver on the same host); `0` refuses them.
   */
  HOLM_WEBHOOK_ALLOW_PRIVATE: z.enum(["0", "1"]).default("0").transform((v) => v === "1"),
  /** The first retry's delay; each next one doubles (with jitter), at most an hour, for 24 h. */
  HOLM_WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().min(10).max(3_600_000).default(30_000),
  /** How long one delivery attempt may take before it counts as failed. */
  HOLM_WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  /** The least severe log line written (app/utils/log.server.ts reads it before this schema runs). */
  HOLM_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** `json` (one object a line) or `pretty`; unset: pretty on a terminal outside production, JSON otherwise. */
  HOLM_LOG_FORMAT: z.enum(["json", "pretty"]).optional(),
  /** `0`: no line per HTTP request (server/request-log.ts); the other lines stay. */
  HOLM_LOG_REQUESTS: z.enum(["0", "1"]).default("1").transform((v) => v === "1"),
  /** `0`: no GET /metrics and nothing counted (server/metrics.ts); `1`: Prometheus metrics. */
  HOLM_METRICS: z.enum(["0", "1"]).default("1").transform((v) => v === "1"),
  /** A bearer token for GET /metrics alone (a scraper needs no server token); the server token works too. */
  HOLM_METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
}).refine((e) => e.HOLM_STORAGE_BACKEND !== "postgres" || e.HOLM_DATABASE_URL !== undefined, {
  path: ["HOLM_DATABASE_URL"],
  message: "HOLM_STORAGE_BACKEND=postgres needs HOLM_DATABASE_URL (postgres://user:pass@host:port/db)",
}).refine((e) => {
  const [mem, max] = [e.HOLM_BOX_MEMORY, e.HOLM_BOX_MEMORY_MAX];
  // A malformed size has its own message already.
  return !SIZE_RE.test(mem) || !SIZE_RE.test(max) || parseBytes(mem) <= parseBytes(max);
}, {
  path: ["HOLM_BOX_MEMORY"],
  message: "must not be more than HOLM_BOX_MEMORY_MAX",
});

export type Env = z.infer<typeof EnvSchema>;

let cached: Env | undefined;

export function parseEnv(source: NodeJS.ProcessEnv = process.env): Env {
  const blanksRemoved = Object.fromEntries(
    Object.entries(source).filter(([, v]) => v !== undefined && v !== ""),
  );
  const result = EnvSchema.safeParse(blanksRemoved);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Error(`invalid environment:\n${lines.join("\n")}`);
  }
  return result.data;
}

let configFile: ConfigFileResult | undefined;

/**
 * The validated settings: the configuration file (HOLM_CONFIG_FILE, default /etc/holm/holm.env
 * when present) is read into process.env first, under the environment's own values.
 */
export function env(): Env {
  if (!cached) {
    configFile ??= loadConfigFile();
    cached = parseEnv();
  }
  return cached;
}

/** What the configuration file gave (after env() ran): for the boot line and `holm doctor`. */
export function configFileResult(): ConfigFileResult | undefined {
  return configFile;
}

/** The address people and agents use to reach this server. */
export function publicUrl(): string {
  const e = env();
  if (e.HOLM_PUBLIC_URL) return e.HOLM_PUBLIC_URL.replace(/\/$/, "");
  const { host, port } = e.HOLM_SERVER_ADDR;
  const shown = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  return `http://${shown}:${port}`;
}
