import type { Duplex } from "node:stream";
import type { Feature } from "~/protocol/features";

// The one interface between the domain and whatever runs boxes. Models call it; only the
// Docker implementation (docker.server.ts) talks to an engine.

export { FEATURES, type Feature } from "~/protocol/features";

/** What an image is made of. Two requests with equal fields are one image. */
export interface ImageRequest {
  /** Sorted, unique. */
  features: Feature[];
  /** Sorted, unique apt package names. */
  packages: string[];
  /** `spec.apps`, by name: each gets a desktop entry and a dock launcher. Absent or empty: none. */
  apps?: ImageApp[];
  /** `wayland`: headless sway, wayvnc and grim in place of Xvfb, fluxbox and x11vnc (ADR 0030). Absent: X11. */
  desktop?: "wayland";
}

/** An application of `spec.apps` as an image has it (models/spec.server.ts checks the text). */
export interface ImageApp {
  name: string;
  packages: string[];
  argv: string[];
  title?: string;
  window_class?: string;
}

export interface BuiltImage {
  /** Full reference, e.g. `holm-x11:3f2a…`. */
  image: string;
  /** True when this call built it, false when it already existed. */
  built: boolean;
}

export interface ImageStatus {
  /** Full reference, as `ensureImage` would return it. */
  image: string;
  /** True when it exists or is being built: asking for it starts no new build. */
  present: boolean;
}

export interface ImageInfo {
  size_bytes: number;
  created_at_ms: number;
}

/** A file put into a box (root-owned, mode 0600, its folder 0700). */
export interface SecretFile {
  /** Absolute path in the box. */
  path: string;
  data: Buffer;
}

/**
 * The capabilities a box keeps (ADR 0006): SETGID, for xterm's pty; a Wayland box also SETUID,
 * since sway refuses to run as root and only root with SETUID can start it as `desk` under
 * no-new-privileges (ADR 0030).
 */
export function boxCapabilities(env: Record<string, string>): string[] {
  return env.HOLM_DESKTOP === "wayland" ? ["SETGID", "SETUID"] : ["SETGID"];
}

/**
 * The engine's log of a box's container, kept on the host's disk: json-file (what `logs` reads
 * on every engine), 8 MiB a file, two files. Anything in a box can print to it (as root through
 * exec, to its init's stdout): with the engine's default (json-file, no limit) a box printing
 * 60 MB kept 120 MiB on the host, and one that never stopped filled the disk every box and the
 * server share. The server reads its lines from the end (a restart, a profile's flush), which
 * rotation keeps (tests/integration/box-log-bound).
 */
export const BOX_LOG = { driver: "json-file", options: { "max-size": "8m", "max-file": "2" } } as const;

export interface BoxLaunch {
  boxId: string;
  image: string;
  labels: Record<string, string>;
  /** Seen by every process in the box and every `docker exec`: never a secret (`putSecrets`). */
  env: Record<string, string>;
  /** Memory limit, such as "2g"; swap is not added on top. */
  memory: string;
  cpus?: string;
  /** The most processes and threads the box may hold. */
  pids: number;
  /** false: the box sits on an internal network with no route out. */
  network: boolean;
  /** true: files live on a named volume that outlives the container. */
  persistent: boolean;
  /** A browser profile's volume, mounted where screen 0's Chromium keeps its profile. */
  profile?: { volume: string; target: string; labels: Record<string, string> };
  /** Publish the box's direct viewer port (DIRECT_VIEWER_PORT) on the host: loopback or every address. */
  directViewer?: { bind: "loopback" | "any" };
}

/**
 * `unreachable`: the runtime answers, but not for this box (a cluster node that is down or was
 * drained); `reason` says why. The box is kept, not moved (swarm.server.ts).
 */
export type RuntimeState = "running" | "paused" | "stopped" | "missing" | "unreachable";

/** How a stopped container ended, as its engine reports it (not anything the box printed). */
export interface BoxExit {
  /** Its main process's exit status (the entrypoint's: images/README.md; 137 when killed). */
  code: number;
  /** Whether the kernel killed a process in it for want of memory. */
  oom_killed: boolean;
}

export interface RuntimeBox {
  ref: string;
  boxId: string;
  state: RuntimeState;
  labels: Record<string, string>;
  /** Address the server reaches the box at, when it runs. */
  address?: string;
  /** Why, in words, when the state needs it (`unreachable`). */
  reason?: string;
  /** How it ended, when it is `stopped` and the engine says. */
  exit?: BoxExit;
}

/** What a new box will ask of a runtime that places boxes itself (a cluster's scheduler). */
export interface PlacementNeed {
  /** Its memory, such as "2g" (reserved on the node it lands on). */
  memory: string;
  /** Whether the placement asked for that memory (not the server's default). */
  memoryAsked?: boolean;
  cpus?: string;
  persistent: boolean;
}

/** An interactive shell in a box, with a TTY (the console's terminal). */
export interface Shell {
  /** The TTY's bytes both ways (raw: no stream multiplexing with a TTY). */
  stream: Duplex;
  resize(cols: number, rows: number): Promise<void>;
  /** Ends the session (the shell gets a hang-up). */
  close(): void;
  /** The shell's exit code once it ends; null when it is unknown (the box went away). */
  exited: Promise<number | null>;
}

export interface EngineImage {
  /** One tag, such as `holm-x11:3f2a…` (an image with two tags is listed twice). */
  image: string;
  created_at_ms: number;
}

export interface Runtime {
  readonly name: string;
  /** Builds the image unless a matching one exists. `log` gets progress lines. */
  ensureImage(req: ImageRequest, log?: (line: string) => void): Promise<BuiltImage>;
  /** Whether `ensureImage(req)` would have to build, without building. */
  imageStatus(req: ImageRequest): Promise<ImageStatus>;
  /** Size and date of an image this runtime holds; undefined when it holds none by that name. */
  imageInfo(image: string): Promise<ImageInfo | undefined>;
  /** Removes an image (its tag, and its layers no other image uses); false when it was not there. */
  removeImage(image: string): Promise<boolean>;
  /** The box images this runtime holds (`holm-x11:*`, `holm-base:*`), by tag, with their dates: for prune. */
  listBoxImages(): Promise<EngineImage[]>;
  /**
   * Refuses a new box before it is recorded (a cluster runtime with no node that can take it now:
   * 503 `unavailable`; something it cannot do at all: 400 `unsupported`; more CPUs or memory than
   * one engine's machine has: 400 `bad_request`). Absent: any box goes.
   */
  admitLaunch?(need: PlacementNeed): Promise<void>;
  /** Why this runtime does not stop boxes (a stop is then `400 unsupported` before anything changes); absent: it does. */
  readonly noStop?: string;
  /** Checks what boxes rely on on the host (networks, firewall); run at server start. */
  prepare(): Promise<void>;
  create(launch: BoxLaunch): Promise<{ ref: string }>;
  start(ref: string): Promise<void>;
  /**
   * Writes the box's secrets as files (images/README.md), never through its environment. The
   * box waits for them as it boots, so this can run alongside the start.
   */
  putSecrets(ref: string, files: SecretFile[]): Promise<void>;
  stop(ref: string): Promise<void>;
  pause(ref: string): Promise<void>;
  /**
   * `restarted`: the engine could not resume the box and started it again instead (a new
   * desktop; the caller waits for it as after a start). Anything else: it runs on where it was.
   */
  unpause(ref: string): Promise<"resumed" | "restarted" | void>;
  /** Removes the container and, for persistent boxes, its volume. Missing is not an error. */
  remove(ref: string): Promise<void>;
  inspect(ref: string): Promise<RuntimeBox>;
  /** The host port the box's direct viewer port is published on (undefined while it is not running); absent: no direct viewer sockets. */
  directViewerPort?(ref: string): Promise<number | undefined>;
  /**
   * The last `tail` lines the box printed (its entrypoint's stdout and stderr), oldest first;
   * none for a box that is gone. Read before removing a box that failed, to say why.
   */
  logs(ref: string, tail: number): Promise<string[]>;
  /** Every box this runtime holds that carries the `holm.box` label. */
  list(): Promise<RuntimeBox[]>;
  /** Whether the engine answers. */
  ping(): Promise<boolean>;
  /**
   * Calls `onExit` with a box's ref as soon as its container ends or is removed (the engine's events), until
   * the returned function is called; absent: the reaper's sweeps alone notice.
   */
  watchExits?(onExit: (ref: string) => void): () => void;
  /** Starts `bash -l` in the box with a TTY of this size (DISPLAY is screen 0). */
  shell(ref: string, size: { cols: number; rows: number }): Promise<Shell>;
}

/** The box could not be paused now (its processes kept changing); a later try may succeed. */
export class PauseBusyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PauseBusyError";
  }
}
