import { sql } from "kysely";
import { z } from "zod";
import { normalizeRequest } from "~/runtime/image-source.server";
import { runtime } from "~/runtime/index.server";
import type { ImageRequest, Runtime } from "~/runtime/runtime";
import { ApiError, badRequest, notFound } from "~/utils/api-error.server";
import { db } from "~/utils/db.server";
import { type Actor, ownerOf } from "./actor";
import { recordEvent } from "./event.server";
import { enqueue } from "./job.server";
import { countImageBuild } from "./quota.server";
import { getRuntime, requireLaunchable } from "./runtime-store.server";
import { SpecSchema, imageRequest, normalizeSpec, specDigest } from "./spec.server";
import type { ImageTable } from "../../db/schema";
import { log } from "~/utils/log.server";

// Images built before need (seed 000, "Runtimes and images"; ADR 0017). A build goes through the
// runtime's own ensureImage, the very call a box launch makes, so the same spec gives the same
// tag and a later launch finds it built. Each image is a row of the store (`building`, `failed`
// with its reason, or `built`): a queued build is a row before it is a job, so a restart queues
// it again instead of losing it. Progress lives in memory only; it is worth nothing once done.

export const ImageBuildSchema = z.strictObject({ spec: SpecSchema.optional() });

export interface ImageJson {
  runtime: string;
  /** The hash in the image's tag: the `{digest}` of /v1/runtimes/{name}/images/{digest}. */
  digest: string;
  image: string;
  /** Of the spec it was asked for with; other specs (another size) may share the image. */
  spec_digest?: string;
  features: string[];
  packages: string[];
  /** 000: `building` or `failed` (with `reason`), absent when the image is built. */
  state?: "building" | "failed";
  reason?: string;
  /** While building: the build's current step and its last lines. */
  progress?: BuildProgress;
  size_bytes?: number;
  created_at_ms: number;
  built_at_ms?: number;
}

export interface BuildProgress {
  step?: string;
  log: string[];
}

/** An image row as the model uses it (the workspace that asked is written with it, never read back here). */
type Row = Omit<ImageTable, "owner">;

const LOG_LINES = 20;
const progress = new Map<string, BuildProgress>();
const key = (rt: string, digest: string) => `${rt}\u0000${digest}`;
const digestOf = (image: string) => image.slice(image.lastIndexOf(":") + 1);
const DIGEST_RE = /^[0-9a-f]{8,64}$/;

function toJson(row: Row): ImageJson {
  const req = JSON.parse(row.request_json) as ImageRequest;
  const out: ImageJson = { runtime: row.runtime, digest: row.digest, image: row.image, features: req.features, packages: req.packages, created_at_ms: Number(row.created_at_ms) };
  if (row.spec_digest) out.spec_digest = row.spec_digest;
  if (row.state === "building" || row.state === "failed") out.state = row.state;
  if (row.reason) out.reason = row.reason;
  const p = progress.get(key(row.runtime, row.digest));
  if (row.state === "building" && p) out.progress = { ...(p.step ? { step: p.step } : {}), log: [...p.log] };
  if (row.built_at_ms !== null) out.built_at_ms = Number(row.built_at_ms);
  return out;
}

/** The runtime images are built on, or why not: 404 for no such runtime, 400 for one we do not launch on. */
async function buildRuntime(name: string): Promise<Runtime> {
  await requireLaunchable(name);
  return runtime(name)!;
}

async function upsert(row: Omit<Row, "created_at_ms"> & { owner?: string | null }): Promise<void> {
  const now = Date.now();
  await db()
    .insertInto("image")
    .values({ ...row, owner: row.owner ?? null, created_at_ms: now })
    .onConflict((oc) =>
      oc.columns(["runtime", "digest"]).doUpdateSet({
        state: row.state,
        reason: row.reason,
        // A built image keeps the date it was first built.
        built_at_ms: row.state === "built" ? sql<number>`coalesce(image.built_at_ms, excluded.built_at_ms)` : null,
        ...(row.spec_digest ? { spec_digest: row.spec_digest } : {}),
      }),
    )
    .execute();
}

async function readRow(rt: string, digest: string): Promise<Row | undefined> {
  return db().selectFrom("image").selectAll().where("runtime", "=", rt).where("digest", "=", digest).executeTakeFirst();
}

/** Why a build failed, in words: apt's own error line when it gave one. */
function reasonOf(err: unknown): string {
  const message = (err as Error).message ?? String(err);
  const apt = /\((E: [^)]*)\)\s*$/.exec(message);
  return (apt ? apt[1]! : message.replace(/The command '[^']*' returned/, "a build step returned")).slice(0, 2000);
}

/** Runs one build to its end and records it; never throws (a failure is the row's `reason`). */
async function runBuild(rtName: string, digest: string, req: ImageRequest, by?: Actor): Promise<void> {
  const k = key(rtName, digest);
  const p: BuildProgress = { log: [] };
  progress.set(k, p);
  try {
    const rt = runtime(rtName);
    if (!rt) throw new Error(`the runtime ${rtName} is no longer configured on this server`);
    const { image, built } = await rt.ensureImage(req, (line) => {
      if (/^Step \d+\/\d+/.test(line)) p.step = line.slice(0, 200);
      p.log.push(line.slice(0, 500));
      if (p.log.length > LOG_LINES) p.log.shift();
    });
    await db().updateTable("image").set({ state: "built", reason: null, built_at_ms: Date.now() }).where("runtime", "=", rtName).where("digest", "=", digest).execute();
    if (built) await recordEvent("image.built", { runtime: rtName, data: { image, digest }, by });
  } catch (err) {
    log.error({ err }, `image build ${rtName}/${digest} failed`);
    await db()
      .updateTable("image")
      .set({ state: "failed", reason: reasonOf(err) })
      .where("runtime", "=", rtName)
      .where("digest", "=", digest)
      .execute()
      .catch((e) => log.error({ err: e }, "recording a failed build"));
  } finally {
    progress.delete(k);
  }
}

/**
 * POST /v1/runtimes/{name}/image: builds the image a box of `spec` would launch from. Inline it
 * answers when the image is built (a failure is 422 `failed` with the reason); queued, it
 * answers at once with `state: building` and an empty `image`, and /v1/jobs/run builds it.
 */
export async function buildImage(
  actor: Actor,
  rtName: string,
  input: z.infer<typeof ImageBuildSchema>,
  opts: { queue: boolean },
): Promise<{ queued: boolean; body: Record<string, unknown> }> {
  const rt = await buildRuntime(rtName);
  const spec = normalizeSpec(input.spec);
  const req = imageRequest(spec);
  const spec_digest = specDigest(spec);
  // The image's own checks of the request (the schema makes the same ones first): what fails them
  // is the caller's to fix (400), not a runtime that cannot answer (503, below).
  try {
    normalizeRequest(req);
  } catch (err) {
    throw badRequest(`spec: ${(err as Error).message}`);
  }
  let status;
  try {
    status = await rt.imageStatus(req);
  } catch (err) {
    throw new ApiError("unavailable", `the ${rtName} runtime cannot tell whether the image exists: ${(err as Error).message}`);
  }
  const digest = digestOf(status.image);
  const owner = ownerOf(actor) ?? null;
  if (owner) await countImageBuild(owner, status);
  const existing = await readRow(rtName, digest);
  const answer = { runtime: rtName, image: status.image, spec_digest, digest };
  // Built already (by an earlier call or a launch), and not under way: nothing to do.
  if (status.present && existing?.state !== "building") {
    await upsert({ runtime: rtName, digest, image: status.image, state: "built", reason: null, request_json: JSON.stringify(req), spec_digest, built_at_ms: existing?.built_at_ms ?? Date.now(), owner });
    return { queued: false, body: answer };
  }
  await upsert({ runtime: rtName, digest, image: status.image, state: "building", reason: null, request_json: JSON.stringify(req), spec_digest, built_at_ms: null, owner });
  if (opts.queue) {
    // A second request while one is queued joins it rather than queueing another.
    if (existing?.state !== "building") enqueue("build", `${rtName}/${digest}`, () => runBuild(rtName, digest, req, actor));
    return { queued: true, body: { ...answer, image: "", state: "building" } };
  }
  await runBuild(rtName, digest, req, actor);
  const row = await readRow(rtName, digest);
  if (row?.state === "failed") throw new ApiError("failed", `the image for this spec did not build: ${row.reason}`);
  return { queued: false, body: answer };
}

/** The images of one runtime (404 for no such runtime), newest first. */
export async function listRuntimeImages(rtName: string): Promise<ImageJson[]> {
  await getRuntime(rtName);
  const rows = await db().selectFrom("image").selectAll().where("runtime", "=", rtName).orderBy("created_at_ms", "desc").execute();
  return rows.map(toJson);
}

/** Every image the server built or is building, on every runtime. */
export async function listAllImages(): Promise<ImageJson[]> {
  const rows = await db().selectFrom("image").selectAll().orderBy("runtime").orderBy("created_at_ms", "desc").execute();
  return rows.map(toJson);
}

async function requireImage(rtName: string, digest: string): Promise<Row> {
  await getRuntime(rtName);
  const row = DIGEST_RE.test(digest) ? await readRow(rtName, digest) : undefined;
  if (!row) throw notFound(`runtime "${rtName}" has no image ${digest}`);
  return row;
}

export async function getImage(rtName: string, digest: string): Promise<ImageJson> {
  const row = await requireImage(rtName, digest);
  const out = toJson(row);
  if (row.state === "built") {
    const info = await runtime(rtName)?.imageInfo(row.image).catch(() => undefined);
    if (info) out.size_bytes = info.size_bytes;
  }
  return out;
}

/** Boxes not removed that run this image, or are starting on a spec that would. */
async function userOf(row: Row): Promise<string | undefined> {
  const boxes = await db()
    .selectFrom("box")
    .select(["id", "image", "state", "spec_json"])
    .where("runtime", "=", row.runtime)
    .where("removed_at_ms", "is", null)
    .where((eb) => eb.or([eb("image", "=", row.image), eb.and([eb("image", "is", null), eb("state", "=", "starting")])]))
    .execute();
  const req = row.request_json;
  for (const b of boxes) {
    if (b.image === row.image) return b.id;
    if (JSON.stringify(imageRequest(JSON.parse(b.spec_json))) === req) return b.id;
  }
  return undefined;
}

/** DELETE …/images/{digest}: refused (409 `denied`) while a box uses it or it is being built. */
export async function deleteImage(actor: Actor, rtName: string, digest: string): Promise<{ runtime: string; digest: string; image: string; deleted: true }> {
  const row = await requireImage(rtName, digest);
  if (row.state === "building") throw new ApiError("denied", `image ${digest} is being built; remove it once the build ends`, { retryable: true });
  const user = await userOf(row);
  if (user) throw new ApiError("denied", `image ${digest} is used by box ${user}; remove the box first`);
  const rt = runtime(rtName);
  let removed = false;
  if (rt && row.state === "built") {
    try {
      removed = await rt.removeImage(row.image);
    } catch (err) {
      // The engine refuses while any container (one this store does not know) uses it.
      if ((err as { statusCode?: number }).statusCode === 409) throw new ApiError("denied", `the ${rtName} engine refuses to remove ${row.image}: a container uses it`);
      throw new ApiError("unavailable", `the ${rtName} runtime did not remove ${row.image}: ${(err as Error).message}`);
    }
  }
  await db().deleteFrom("image").where("runtime", "=", rtName).where("digest", "=", digest).execute();
  if (removed) await recordEvent("image.removed", { runtime: rtName, data: { image: row.image, digest }, by: actor });
  return { runtime: rtName, digest, image: row.image, deleted: true };
}

/** Records the image a box launch ensured, so the images list shows what launches built too. */
export async function noteLaunchImage(rtName: string, image: string, req: ImageRequest, spec_digest: string): Promise<void> {
  await upsert({ runtime: rtName, digest: digestOf(image), image, state: "built", reason: null, request_json: JSON.stringify(req), spec_digest, built_at_ms: Date.now() });
}

/**
 * At boot: every build the store has as `building` (queued, or cut off by the stop) is queued
 * again; one whose runtime is gone is `failed` with the reason. None vanishes.
 */
export async function resumeBuilds(): Promise<number> {
  const rows = await db().selectFrom("image").selectAll().where("state", "=", "building").execute();
  for (const row of rows) {
    if (!runtime(row.runtime)) {
      await db()
        .updateTable("image")
        .set({ state: "failed", reason: `the server restarted and runtime ${row.runtime} is no longer configured` })
        .where("runtime", "=", row.runtime)
        .where("digest", "=", row.digest)
        .execute();
      continue;
    }
    const req = JSON.parse(row.request_json) as ImageRequest;
    enqueue("build", `${row.runtime}/${row.digest}`, () => runBuild(row.runtime, row.digest, req));
  }
  return rows.length;
}
