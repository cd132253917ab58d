import { DEFAULT_RUNTIME, runtime } from "~/runtime/index.server";
import { baseImageTag } from "~/runtime/image-source.server";
import type { ImageRequest } from "~/runtime/runtime";
import { db } from "~/utils/db.server";
import { env } from "~/utils/env.server";
import { recordEvent } from "./event.server";
import { imageRequest, type NormalSpec, normalizeSpec } from "./spec.server";

// Pruning old box images (ADR 0017), part of the prune job. Every change to the image sources
// (or the agent) makes new tags; the old ones stay on the engine until removed. Prune removes a
// `holm-x11:*` / `holm-base:*` tag of this server's own runtime (the built-in engine) when
//   (a) no spec this server knows would get it today: not the tag of the default spec, of any
//       image row (a spec someone built or launched), of any box that is not removed, nor the
//       base of today's sources;
//   (b) no box row that is not removed runs it;
//   (c) it is older than HOLM_IMAGE_PRUNE_AFTER (3 days by default; `0` never prunes);
//   (d) it is not being built (an image row `building`).
// Another server sharing the engine (another checkout, another version) may still want a tag this
// one finds old: the grace gives it time to build its own, and the engine itself refuses to remove
// an image a container uses (a 409, one this store does not know): that tag is skipped, not an error.

export interface ImagePruneResult {
  removed: string[];
  /** Old tags the engine kept because a container uses them. */
  in_use: string[];
}

export async function pruneImages(now = Date.now()): Promise<ImagePruneResult> {
  const out: ImagePruneResult = { removed: [], in_use: [] };
  const after = env().HOLM_IMAGE_PRUNE_AFTER;
  const rt = runtime(DEFAULT_RUNTIME);
  if (after === 0 || !rt) return out;
  const engine = await rt.listBoxImages();
  if (engine.length === 0) return out;

  const rows = await db().selectFrom("image").select(["digest", "image", "state", "request_json"]).where("runtime", "=", DEFAULT_RUNTIME).execute();
  const boxes = await db().selectFrom("box").select(["image", "spec_json"]).where("runtime", "=", DEFAULT_RUNTIME).where("removed_at_ms", "is", null).execute();
  const requests = new Map<string, ImageRequest>();
  const want = (req: ImageRequest) => requests.set(JSON.stringify(req), req);
  want(imageRequest(normalizeSpec(undefined)));
  for (const r of rows) want(JSON.parse(r.request_json) as ImageRequest);
  // A box's own image is kept below whatever its spec says; a spec without a desktop (a row
  // written before specs had one) must not stop the whole prune.
  for (const b of boxes) {
    const spec = JSON.parse(b.spec_json) as Partial<NormalSpec> | null;
    if (spec?.desktop) want(imageRequest(spec as NormalSpec));
  }
  const keep = new Set<string>([baseImageTag()]);
  for (const req of requests.values()) keep.add((await rt.imageStatus(req)).image);
  for (const b of boxes) if (b.image) keep.add(b.image);
  for (const r of rows) if (r.state === "building") keep.add(r.image);

  for (const img of engine) {
    if (keep.has(img.image) || img.created_at_ms > now - after) continue;
    try {
      if (!(await rt.removeImage(img.image))) continue;
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 409) {
        out.in_use.push(img.image);
        continue;
      }
      throw err;
    }
    out.removed.push(img.image);
    const digest = img.image.slice(img.image.lastIndexOf(":") + 1);
    await db().deleteFrom("image").where("runtime", "=", DEFAULT_RUNTIME).where("image", "=", img.image).execute();
    await recordEvent("image.removed", { runtime: DEFAULT_RUNTIME, data: { image: img.image, digest, pruned: true } });
  }
  return out;
}
