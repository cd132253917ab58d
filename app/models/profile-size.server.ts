import { localDocker } from "~/runtime/index.server";
import { volumeBytes } from "~/runtime/docker-volume.server";
import { ApiError } from "~/utils/api-error.server";
import { db } from "~/utils/db.server";
import { env } from "~/utils/env.server";
import { log } from "~/utils/log.server";
import type { BoxRow } from "./box-record.server";

// How big a browser profile is, and how big it may be (ADR 0025). A page can store as much as
// Chromium lets it (IndexedDB, Cache Storage: a share of the disk), and the profile's volume
// outlives the box: a review saw one grow to 1.8 GB. Its size is measured whenever a box lets it
// go (its stop or removal, profile-flush.server.ts), shown in GET /v1/profiles and the console,
// and a launch refuses one measured over HOLM_PROFILE_MAX_BYTES. While a box runs nothing caps it.

const SERVER_OWNER = "";

/**
 * Measures the volume of the profile box `row` took, from the engine (the box may be stopped or
 * its Chromium dead), and records it. Never fails the caller: a size not measured stays as it was.
 */
export async function measureProfile(row: BoxRow, name: string): Promise<void> {
  const docker = localDocker()?.docker;
  if (!docker || !row.image) return;
  const owner = row.owner ?? SERVER_OWNER;
  try {
    const found = await db().selectFrom("browser_profile").select(["volume"]).where("owner", "=", owner).where("name", "=", name).executeTakeFirst();
    if (!found) return;
    const bytes = await volumeBytes(docker, found.volume, row.image);
    if (bytes === undefined) return;
    await db().updateTable("browser_profile").set({ size_bytes: bytes, measured_at_ms: Date.now() }).where("owner", "=", owner).where("name", "=", name).execute();
    const max = env().HOLM_PROFILE_MAX_BYTES;
    if (bytes > max) log.warn({ box: row.id }, `browser profile "${name}" holds ${bytes} bytes, over HOLM_PROFILE_MAX_BYTES (${max}); the next launch with it is refused`);
    else log.info({ box: row.id }, `browser profile "${name}" holds ${bytes} bytes`);
  } catch (err) {
    log.error({ err, box: row.id }, `browser profile "${name}": its size could not be measured`);
  }
}

/** 409 `denied` for a launch with a profile last measured over the bound: what it holds and the way out. */
export function refuseOversize(name: string, sizeBytes: number | string | null): void {
  const max = env().HOLM_PROFILE_MAX_BYTES;
  if (sizeBytes === null || Number(sizeBytes) <= max) return;
  throw new ApiError(
    "denied",
    `browser profile "${name}" holds ${Number(sizeBytes)} bytes, over this server's bound of ${max} (HOLM_PROFILE_MAX_BYTES); ` +
      `delete it (DELETE /v1/profiles/${name}, or the console's Profiles page) to start it again empty, or launch without it`,
    { retryable: false },
  );
}
