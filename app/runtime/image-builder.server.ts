// Builds the box images with no registry: the base from debootstrap (images/base/build.sh), the
// desktop from a Dockerfile generated here. A tag is a hash of everything that goes into an
// image, so a changed source never reuses an old image and an unchanged one is never rebuilt.

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import { Readable } from "node:stream";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type Dockerode from "dockerode";
import tar from "tar-fs";
import { FEATURES, type BuiltImage, type Feature, type ImageRequest, type ImageStatus } from "./runtime";

export type BuildLog = (line: string) => void;

/** Debian package names as apt accepts them; nothing else may reach a Dockerfile. */
export const APT_PACKAGE_RE = /^[a-z0-9][a-z0-9+.-]{0,127}$/;

const CORE_PACKAGES = [
  "xvfb",
  "fluxbox",
  "chromium",
  "x11vnc",
  "xdotool",
  "wmctrl",
  "imagemagick",
  "xclip",
  "xterm",
  "x11-utils",
  "procps",
  "dbus-x11",
  "nodejs",
  "fonts-dejavu-core",
  "ca-certificates",
] as const;

const FEATURE_PACKAGES: Record<Feature, readonly string[]> = {
  wide_fonts: ["fonts-noto-cjk", "fonts-noto-color-emoji"],
  video: ["ffmpeg"],
  dock: ["tint2"],
  accessibility: ["at-spi2-core", "python3-pyatspi"],
  audio: ["pulseaudio"],
  x11_apps: ["x11-apps"],
};

const BASE_REPO = "holm-base";
const X11_REPO = "holm-x11";
const AGENT_BUNDLE = "build/agent/agent.mjs";
const AGENT_SOURCES = "images/x11/agent";
/** Bundled into the agent too: the action vocabulary shared with the server. */
const AGENT_SHARED_SOURCES = "app/protocol";
const AGENT_BUILD_SCRIPT = "scripts/build-agent.mjs";

// This module runs from app/runtime under tsx and from build/server once bundled: the repo root
// is the nearest ancestor holding images/, wherever that is.
function findRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, "images", "x11")) && existsSync(path.join(dir, "package.json"))) {
      return dir;
    }
    const parent = path.dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
}

const root = findRoot();

interface SourceFile {
  /** Path relative to the repo root, with forward slashes. */
  rel: string;
  abs: string;
}

// Dotfiles are skipped so an editor's swap file does not make a new image.
function listFiles(relDir: string): SourceFile[] {
  const out: SourceFile[] = [];
  const walk = (rel: string): void => {
    const abs = path.join(root, rel);
    for (const entry of readdirSync(abs, { withFileTypes: true })) {
      if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
      const childRel = `${rel}/${entry.name}`;
      if (entry.isDirectory()) walk(childRel);
      else if (entry.isFile()) out.push({ rel: childRel, abs: path.join(root, childRel) });
    }
  };
  walk(relDir);
  return out.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
}

// Length-prefixed so that no two different inputs can produce the same byte stream.
function hashPart(hash: ReturnType<typeof createHash>, name: string, data: string | Buffer): void {
  const bytes = typeof data === "string" ? Buffer.from(data) : data;
  hash.update(`${name}\0${bytes.length}\0`);
  hash.update(bytes);
}

function hashFiles(hash: ReturnType<typeof createHash>, files: SourceFile[]): void {
  for (const f of files) hashPart(hash, `file:${f.rel}`, readFileSync(f.abs));
}

/** `holm-base:<hash of images/base + arch>`. */
export function baseImageTag(): string {
  const hash = createHash("sha256");
  hashPart(hash, "kind", "holm-base/1");
  hashFiles(hash, listFiles("images/base"));
  hashPart(hash, "arch", process.arch);
  return `${BASE_REPO}:${hash.digest("hex").slice(0, 16)}`;
}

/** Checks and puts a request in canonical form (sorted, unique); throws on anything unknown. */
export function normalizeRequest(req: ImageRequest): ImageRequest {
  const known: readonly string[] = FEATURES;
  for (const f of req.features) {
    if (!known.includes(f)) throw new Error(`unknown feature: ${JSON.stringify(f)}`);
  }
  for (const p of req.packages) {
    if (typeof p !== "string" || !APT_PACKAGE_RE.test(p)) {
      throw new Error(`not a Debian package name: ${JSON.stringify(p)}`);
    }
  }
  const sortUnique = <T extends string>(xs: readonly T[]): T[] =>
    [...new Set(xs)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return { features: sortUnique(req.features), packages: sortUnique(req.packages) };
}

function aptLayer(packages: readonly string[]): string {
  for (const p of packages) {
    // Checked again here because this is the one place text turns into a shell command.
    if (!APT_PACKAGE_RE.test(p)) throw new Error(`not a Debian package name: ${JSON.stringify(p)}`);
  }
  return (
    "RUN apt-get -q update \\\n" +
    ` && apt-get -qy install --no-install-recommends ${packages.join(" ")} \\\n` +
    " && apt-get clean && rm -rf /var/lib/apt/lists/*"
  );
}

/** The Dockerfile for a (normalized) request. Exported for tests. */
export function x11Dockerfile(req: ImageRequest, baseTag: string): string {
  const { features, packages } = normalizeRequest(req);
  const lines = [
    "# Generated by app/runtime/image-builder.server.ts; do not edit.",
    `FROM ${baseTag}`,
    "ENV DEBIAN_FRONTEND=noninteractive",
    aptLayer(CORE_PACKAGES),
  ];
  // Fixed order, one layer each: images that share a prefix of features share those layers.
  for (const feature of FEATURES) {
    if (!features.includes(feature)) continue;
    lines.push(`# feature: ${feature}`, aptLayer(FEATURE_PACKAGES[feature]));
  }
  if (packages.length > 0) lines.push("# packages", aptLayer(packages));
  lines.push(
    `LABEL holm.image="x11" holm.features="${features.join(",")}" holm.packages="${packages.join(",")}"`,
    // A default for a bare `docker run`; the runtime passes its own.
    `ENV HOLM_FEATURES="${features.join(",")}"`,
    "HEALTHCHECK --interval=5s --timeout=5s --start-period=30s --retries=3 CMD [\"/opt/holm/healthcheck.sh\"]",
    'ENTRYPOINT ["/opt/holm/entrypoint.sh"]',
    // Last, in order of how often they change: an agent change rebuilds only the final layer.
    "COPY files/ /opt/holm/",
    "COPY agent.mjs /opt/holm/agent.mjs",
    "",
  );
  return lines.join("\n");
}

function agentBundlePath(): string {
  // Lets a test point at a bundle outside the repo without touching build/.
  return process.env.HOLM_AGENT_BUNDLE ?? path.join(root, AGENT_BUNDLE);
}

interface X11Plan {
  tag: string;
  baseTag: string;
  dockerfile: string;
  files: SourceFile[];
  agentBundle: string;
  request: ImageRequest;
}

function planX11(req: ImageRequest): X11Plan {
  const request = normalizeRequest(req);
  const baseTag = baseImageTag();
  const dockerfile = x11Dockerfile(request, baseTag);
  const agentBundle = agentBundlePath();
  if (!existsSync(agentBundle)) {
    throw new Error(`agent bundle ${agentBundle} is missing: run \`node ${AGENT_BUILD_SCRIPT}\``);
  }
  const files = [...listFiles("images/base"), ...listFiles("images/x11")];
  const hash = createHash("sha256");
  hashPart(hash, "kind", "holm-x11/1");
  hashFiles(hash, files);
  hashPart(hash, "agent", readFileSync(agentBundle));
  hashPart(hash, "features", request.features.join(","));
  hashPart(hash, "packages", request.packages.join(","));
  hashPart(hash, "arch", process.arch);
  // Covers what lives in this module (core packages, feature packages, layer layout).
  hashPart(hash, "dockerfile", dockerfile);
  const tag = `${X11_REPO}:${hash.digest("hex").slice(0, 16)}`;
  return { tag, baseTag, dockerfile, files, agentBundle, request };
}

/**
 * The tag `ensureX11Image` would produce for `req`, without building. Reads the image sources
 * and the agent bundle; throws when the bundle has not been built.
 */
export function imageTag(req: ImageRequest): string {
  return planX11(req).tag;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function isNotFound(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { statusCode?: unknown }).statusCode === 404;
}

async function imageExists(docker: Dockerode, tag: string): Promise<boolean> {
  try {
    await docker.getImage(tag).inspect();
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/** Splits a stream of chunks into trimmed, non-empty lines; chunks may end mid-line. */
function lineSplitter(log: BuildLog): { push(chunk: string): void; flush(): void } {
  let rest = "";
  return {
    push(chunk) {
      const parts = (rest + chunk).split(/\r\n|\r|\n/);
      rest = parts.pop() ?? "";
      for (const p of parts) {
        const line = p.trim();
        if (line) log(line);
      }
    },
    flush() {
      const line = rest.trim();
      rest = "";
      if (line) log(line);
    },
  };
}

function runLogged(cmd: string, args: string[], log: BuildLog): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    const out = lineSplitter(log);
    const err = lineSplitter(log);
    const tail: string[] = [];
    const keep = (s: string): void => {
      tail.push(s);
      if (tail.length > 20) tail.shift();
    };
    child.stdout.setEncoding("utf8").on("data", (c: string) => {
      keep(c);
      out.push(c);
    });
    child.stderr.setEncoding("utf8").on("data", (c: string) => {
      keep(c);
      err.push(c);
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      out.flush();
      err.flush();
      if (code === 0) resolve();
      else {
        const last = tail.join("").trim().split("\n").slice(-5).join("\n");
        reject(new Error(`${cmd} ${args.join(" ")} failed (${signal ?? `exit ${code}`}): ${last}`));
      }
    });
  });
}

interface Flight {
  promise: Promise<BuiltImage>;
  logs: Set<BuildLog>;
}

// In-flight builds by tag: concurrent callers for one image share one build, and each of them
// gets its progress lines.
const inFlight = new Map<string, Flight>();

function once(tag: string, log: BuildLog, build: (log: BuildLog) => Promise<BuiltImage>): Promise<BuiltImage> {
  const running = inFlight.get(tag);
  if (running) {
    running.logs.add(log);
    return running.promise;
  }
  const logs = new Set<BuildLog>([log]);
  const fanOut: BuildLog = (line) => {
    for (const l of logs) l(line);
  };
  const promise = build(fanOut).finally(() => inFlight.delete(tag));
  inFlight.set(tag, { promise, logs });
  return promise;
}

/** Builds `holm-base:<hash>` with images/base/build.sh (debootstrap, root) unless it exists. */
export function ensureBaseImage(docker: Dockerode, log: BuildLog = () => {}): Promise<BuiltImage> {
  const tag = baseImageTag();
  return once(tag, log, async (progress) => {
    if (await imageExists(docker, tag)) return { image: tag, built: false };
    progress(`building ${tag} (debootstrap bookworm, ~30 s)`);
    try {
      await runLogged("bash", [path.join(root, "images/base/build.sh"), tag], progress);
    } catch (err) {
      progress(`base image build failed: ${errorMessage(err)}`);
      throw err;
    }
    if (!(await imageExists(docker, tag))) throw new Error(`build.sh finished but ${tag} does not exist`);
    return { image: tag, built: true };
  });
}

function newestMtime(relDir: string): number {
  if (!existsSync(path.join(root, relDir))) return 0;
  let newest = 0;
  for (const f of listFiles(relDir)) newest = Math.max(newest, statSync(f.abs).mtimeMs);
  return newest;
}

let agentBuild: Promise<void> | undefined;

// Builds the agent bundle when it is missing or older than its sources, so an image never
// carries a stale agent. Shared between concurrent callers like the image builds.
function ensureAgentBundle(log: BuildLog): Promise<void> {
  if (process.env.HOLM_AGENT_BUNDLE) return Promise.resolve();
  const bundle = path.join(root, AGENT_BUNDLE);
  const stale = !existsSync(bundle) || statSync(bundle).mtimeMs < Math.max(newestMtime(AGENT_SOURCES), newestMtime(AGENT_SHARED_SOURCES));
  if (!stale) return Promise.resolve();
  const script = path.join(root, AGENT_BUILD_SCRIPT);
  if (!existsSync(script)) {
    // A bundle that exists but is older than its sources is still usable without the script.
    if (existsSync(bundle)) return Promise.resolve();
    return Promise.reject(new Error(`agent bundle ${bundle} is missing and ${script} does not exist`));
  }
  agentBuild ??= (async () => {
    log(`building the agent bundle (${AGENT_BUILD_SCRIPT})`);
    await runLogged(process.execPath, [script], log);
    if (!existsSync(bundle)) throw new Error(`${AGENT_BUILD_SCRIPT} did not write ${bundle}`);
  })().finally(() => {
    agentBuild = undefined;
  });
  return agentBuild;
}

interface ProgressEvent {
  stream?: string;
  error?: string;
  errorDetail?: { message?: string };
}

async function buildFromContext(
  docker: Dockerode,
  plan: X11Plan,
  log: BuildLog,
): Promise<void> {
  const ctx = await mkdtemp(path.join(os.tmpdir(), "holm-x11-context-"));
  try {
    await writeFile(path.join(ctx, "Dockerfile"), plan.dockerfile);
    for (const f of plan.files) {
      if (!f.rel.startsWith("images/x11/") || f.rel.startsWith(`${AGENT_SOURCES}/`)) continue;
      const dest = path.join(ctx, "files", f.rel.slice("images/x11/".length));
      await mkdir(path.dirname(dest), { recursive: true });
      await copyFile(f.abs, dest);
    }
    await copyFile(plan.agentBundle, path.join(ctx, "agent.mjs"));

    // Fixed owner, modes and times: the context is the same bytes whoever checked the repo out.
    const pack = tar.pack(ctx, {
      map(header) {
        header.uid = 0;
        header.gid = 0;
        header.mtime = new Date(0);
        header.mode = header.type === "directory" || header.name.endsWith(".sh") ? 0o755 : 0o644;
        return header;
      },
    });
    // tar-fs 3 packs into a streamx stream; dockerode wants a Node stream.
    const context = Readable.from(pack as AsyncIterable<Buffer>);
    const stream = await docker.buildImage(context, {
      t: plan.tag,
      rm: true,
      forcerm: true,
    });
    // The daemon's error says only "returned a non-zero code"; apt's own "E:" line says why.
    let aptError: string | undefined;
    const lines = lineSplitter((line) => {
      if (line.startsWith("E: ")) aptError = line;
      log(line);
    });
    await new Promise<void>((resolve, reject) => {
      let failure: string | undefined;
      docker.modem.followProgress(
        stream,
        (err: Error | null) => {
          lines.flush();
          if (err) reject(err);
          else if (failure !== undefined) {
            const why = aptError ? ` (${aptError})` : "";
            reject(new Error(`building ${plan.tag} failed: ${failure}${why}`));
          }
          else resolve();
        },
        (event: ProgressEvent) => {
          if (typeof event.stream === "string") lines.push(event.stream);
          if (event.error !== undefined || event.errorDetail !== undefined) {
            failure = event.errorDetail?.message ?? event.error ?? "unknown error";
          }
        },
      );
    });
  } finally {
    await rm(ctx, { recursive: true, force: true });
  }
}

/**
 * Whether `ensureX11Image(req)` would start a build: false when the image exists or a build of
 * it is already under way (joining that costs nothing more).
 */
export async function x11ImageStatus(docker: Dockerode, req: ImageRequest): Promise<ImageStatus> {
  const { tag } = planX11(req);
  return { image: tag, present: inFlight.has(tag) || (await imageExists(docker, tag)) };
}

/**
 * Returns the desktop image for `req`, building it (and the base, and the agent bundle) only
 * when no image with its tag exists.
 */
export async function ensureX11Image(
  docker: Dockerode,
  req: ImageRequest,
  log: BuildLog = () => {},
): Promise<BuiltImage> {
  await ensureAgentBundle(log);
  const plan = planX11(req);
  return once(plan.tag, log, async (progress) => {
    if (await imageExists(docker, plan.tag)) return { image: plan.tag, built: false };
    await ensureBaseImage(docker, progress);
    progress(
      `building ${plan.tag} (features: ${plan.request.features.join(",") || "none"}; ` +
        `packages: ${plan.request.packages.join(",") || "none"})`,
    );
    try {
      await buildFromContext(docker, plan, progress);
    } catch (err) {
      progress(`image build failed: ${errorMessage(err)}`);
      throw err;
    }
    return { image: plan.tag, built: true };
  });
}
