// Builds the box images with no registry: the base from debootstrap (images/base/build.sh), the
// desktop from the Dockerfile that image-source.server.ts writes, tagged with the hash it computes.
// This half runs Docker and scripts: it skips an image whose tag exists, shares one build among
// concurrent callers, and streams each build's lines to whoever waits for it.

import { spawn } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import { Readable } from "node:stream";
import path from "node:path";
import type Dockerode from "dockerode";
import tar from "tar-fs";
import type { BuiltImage, ImageRequest, ImageStatus } from "./runtime";
import {
  AGENT_BUILD_SCRIPT,
  AGENT_BUNDLE,
  AGENT_SHARED_SOURCES,
  AGENT_SOURCES,
  type X11Plan,
  appFiles,
  baseImageTag,
  listFiles,
  planX11,
  root,
} from "./image-source.server";

export type BuildLog = (line: string) => void;

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

/** Terminal colours and cursor moves (the engine colours a build step's stderr red). */
const ANSI_RE = /\x1b\[[0-9;?]*[A-Za-z]/g;

/** How the engine marks a build step's stderr: each write comes wrapped in red. */
const STDERR_MARK = "\x1b[91m";

/**
 * Splits a stream of chunks into trimmed, non-empty lines without terminal escapes; chunks may
 * end mid-line. A build's stdout and stderr arrive interleaved, each write whole: a write from
 * the other stream ends the pending line (apt prints "Building dependency tree..." and its
 * newline apart, and its "E: ..." on stderr can land between them).
 */
export function lineSplitter(log: BuildLog): { push(chunk: string): void; flush(): void } {
  let rest = "";
  let restIsErr = false;
  const emit = (raw: string): void => {
    const line = raw.trim();
    if (line) log(line);
  };
  return {
    push(chunk) {
      const isErr = chunk.startsWith(STDERR_MARK);
      if (isErr !== restIsErr && rest.replace(ANSI_RE, "").trim()) {
        emit(rest.replace(ANSI_RE, ""));
        rest = "";
      }
      restIsErr = isErr;
      const parts = (rest + chunk).replace(ANSI_RE, "").split(/\r\n|\r|\n/);
      rest = parts.pop() ?? "";
      for (const p of parts) emit(p);
    },
    flush() {
      const line = rest.replace(ANSI_RE, "");
      rest = "";
      emit(line);
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
    // spec.apps: argv files and desktop entries, made from the request (image-source.server.ts).
    for (const f of appFiles(plan.request.apps ?? [])) {
      await mkdir(path.dirname(path.join(ctx, f.rel)), { recursive: true });
      await writeFile(path.join(ctx, f.rel), f.content);
    }

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
