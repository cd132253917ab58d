import type { Insertable, Selectable, Transaction } from "kysely";
import type { BoxTable, Database } from "../../db/schema";
import type { ImageStatus } from "~/runtime/runtime";
import { ApiError } from "~/utils/api-error.server";
import { db, lockKey } from "~/utils/db.server";
import { env } from "~/utils/env.server";

// Per-workspace limits: live boxes, and new images the server builds for a workspace (each one
// costs minutes of CPU and hundreds of MB of disk). A refusal is 409 `denied`, retryable when
// waiting can help (a box expires, a build leaves the window). The server token acts for the
// operator and has no limits here.

const BUILD_WINDOW_MS = 24 * 3600_000;

/** States of a box that holds (or may soon hold) a container. */
const NOT_LIVE = ["gone", "failed"];

function count(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * Records the new box if its workspace is within its limits, counting `image` as a new build
 * when the runtime would have to build it. Check and insert are one transaction, so concurrent
 * requests cannot overshoot a limit.
 */
export async function insertBoxWithinLimits(row: Insertable<BoxTable>, image?: ImageStatus): Promise<void> {
  const owner = row.owner;
  const e = env();
  await db()
    .transaction()
    .execute(async (tx) => {
      if (owner) {
        await lockKey(tx, quotaKey(owner));
        await requireRoom(tx, owner);
        if (image && !image.present) await countBuild(tx, owner, image.image, e.HOLM_WORKSPACE_IMAGE_BUILDS);
      }
      await tx.insertInto("box").values(row).execute();
    });
}

/**
 * Claims a pool box for `owner` (pool.server.ts) if the workspace has room, as a cold create
 * would: check and write are one transaction. False when the box was no longer in the pool.
 */
export async function claimWithinLimits(owner: string | null, id: string, patch: Partial<Selectable<BoxTable>>): Promise<boolean> {
  return db()
    .transaction()
    .execute(async (tx) => {
      if (owner) {
        await lockKey(tx, quotaKey(owner));
        await requireRoom(tx, owner);
      }
      // Not one the pool has begun removing (its retire is conditional on `pooled` the same way).
      const res = await tx
        .updateTable("box")
        .set({ ...patch, pooled: 0 })
        .where("id", "=", id)
        .where("pooled", "=", 1)
        .where("removed_at_ms", "is", null)
        .executeTakeFirst();
      return Number(res.numUpdatedRows) === 1;
    });
}

/**
 * Counts a build a workspace asks for before need (POST /v1/runtimes/{name}/image) against the
 * same limit as a launch that builds; nothing when the image exists or is being built.
 */
export async function countImageBuild(owner: string, image: ImageStatus): Promise<void> {
  if (image.present) return;
  await db()
    .transaction()
    .execute(async (tx) => {
      await lockKey(tx, quotaKey(owner));
      await countBuild(tx, owner, image.image, env().HOLM_WORKSPACE_IMAGE_BUILDS);
    });
}

/**
 * One workspace's limits are checked and written by one transaction at a time: on PostgreSQL,
 * transactions run side by side (and on other servers), and two counts before two inserts would
 * both see room for one more.
 */
const quotaKey = (owner: string) => `quota:${owner}`;

async function requireRoom(tx: Transaction<Database>, owner: string): Promise<void> {
  const e = env();
  const { n } = await tx
    .selectFrom("box")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("owner", "=", owner)
    .where("removed_at_ms", "is", null)
    .where("state", "not in", NOT_LIVE)
    .executeTakeFirstOrThrow();
  const max = e.HOLM_WORKSPACE_BOXES;
  if (Number(n) >= max) {
    throw new ApiError(
      "denied",
      `workspace ${owner} already has ${count(Number(n), "live box", "live boxes")}, the most this server allows ` +
        `(HOLM_WORKSPACE_BOXES=${max}); remove one, or wait until one expires`,
      { retryable: max > 0 },
    );
  }
}

async function countBuild(tx: Transaction<Database>, owner: string, image: string, max: number): Promise<void> {
  const now = Date.now();
  const since = now - BUILD_WINDOW_MS;
  await tx.deleteFrom("image_build").where("at_ms", "<", since).execute();
  const rows = await tx.selectFrom("image_build").select(["image", "at_ms"]).where("owner", "=", owner).execute();
  // Asking again for an image this workspace already had built (a build that failed, an image
  // removed since) is not a new build.
  if (rows.some((r) => r.image === image)) return;
  const built = new Set(rows.map((r) => r.image)).size;
  if (built >= max) {
    const oldest = Math.min(...rows.map((r) => Number(r.at_ms)));
    const when = rows.length > 0 ? `, or try again after ${new Date(oldest + BUILD_WINDOW_MS).toISOString()}` : "";
    throw new ApiError(
      "denied",
      `workspace ${owner} had the server build ${count(built, "new image", "new images")} in the last 24 hours, the most ` +
        `this server allows (HOLM_WORKSPACE_IMAGE_BUILDS=${max}); launch with the features and packages of ` +
        `an image that exists${when}`,
      { retryable: max > 0 },
    );
  }
  await tx.insertInto("image_build").values({ owner, image, at_ms: now }).execute();
}
