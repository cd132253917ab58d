import { createHash } from "node:crypto";
import { DEFAULT_RUNTIME, localDocker } from "~/runtime/index.server";
import { ApiError, badRequest, notFound, unsupported } from "~/utils/api-error.server";
import { db } from "~/utils/db.server";
import { derive, statedServerId } from "~/utils/secret.server";
import { refuseOversize } from "./profile-size.server";
import { PROFILE_NAME_CHARS, PROFILE_NAME_RULE } from "./spec.server";

// Named browser profiles (`placement.profile`, seed 000/002, issue 18). A profile is a Chromium
// profile directory on an engine volume of its own, per workspace and name: screen 0's Chromium
// of the box that takes it runs on it, so the next box with that name starts where the last one
// left off (logged in, its cookies and storage). One box holds a profile at a time; whether the
// last taker still holds it is read from that box's row, so a box that is `gone` (removed, or lost
// by its runtime) gives it up with nothing to release. A fork never gets one (seed 001, fork.server.ts).
// Only the built-in engine keeps profiles: a volume lives on one engine, and a swarm or remote
// engine would put the next box elsewhere.

export interface ProfileJson {
  name: string;
  runtime: string;
  created_at_ms: number;
  last_used_ms: number;
  /** The live box holding it now, or null. */
  held_by: string | null;
  /** Bytes it held when a box last let it go (profile-size.server.ts); null until measured. */
  size_bytes: number | null;
  /**
   * Free, and the engine has no volume for it: its next box starts with an empty profile, logged
   * out (a restored server: `holm backup` keeps the rows, not the volumes; or removed by hand).
   */
  data_missing: boolean;
}

/** Where screen 0's Chromium keeps its profile in the box (images/x11/entrypoint.sh). */
export const PROFILE_TARGET = "/root/.config/holm/chromium-0";

const SERVER_OWNER = "";

/**
 * The engine volume of a new profile: a hash, so any owner id and name make a valid volume name,
 * keyed by this install's secret key (and server id, when stated), so two servers on one engine never
 * name the same volume for the server token's profile of one name (the owner "" on both). It is
 * stored in the profile's row and read from there: servers sharing a store (ADR 0021) use the
 * first one's name, and rows made before the key was part of it keep their volume and its data.
 */
function newProfileVolume(owner: string | null | undefined, name: string): string {
  // A server with a stated id (`holm restore --as-new-server`) shares the original's key: its id
  // keeps its volumes apart from the original's. Without one the name is as before, unchanged.
  const stated = statedServerId();
  const base = derive("browser-profile-volume") + (stated ? `\0${stated}` : "");
  const h = createHash("sha256").update(`${base}\0${owner ?? SERVER_OWNER}\0${name}`).digest("hex").slice(0, 32);
  return `holm-profile-${h}`;
}

/** The volume a profile's row names, for the box that holds it (taken by takeProfile). */
export async function profileVolume(owner: string | null | undefined, name: string): Promise<string> {
  const row = await db().selectFrom("browser_profile").select(["volume"]).where("owner", "=", owner ?? SERVER_OWNER).where("name", "=", name).executeTakeFirst();
  if (!row) throw new Error(`browser profile "${name}" is no longer recorded`);
  return row.volume;
}

/**
 * Whether a box still holds what it took: until it is `gone`. A box being removed is `gone` only
 * once its container is (its Chromium has flushed the profile), and a failed box keeps its
 * container until it is deleted, so neither shares the volume with the next box.
 */
async function liveHolder(boxId: string | null): Promise<string | null> {
  if (!boxId) return null;
  const row = await db().selectFrom("box").select(["state"]).where("id", "=", boxId).executeTakeFirst();
  return row && row.state !== "gone" ? boxId : null;
}

/** Refused before anything is recorded: a profile only where this server keeps them. */
export function checkProfileRuntime(runtime: string): void {
  if (runtime !== DEFAULT_RUNTIME) {
    throw unsupported(`placement.profile: browser profiles are kept on the built-in "${DEFAULT_RUNTIME}" runtime only, not on "${runtime}"`);
  }
}

/**
 * Gives the profile to a box just recorded (made on first use). Another live box holding it:
 * 409 `denied` naming the holder (retryable: it is free once that box is removed). Two boxes
 * asking at once: the conditional update lets one through.
 */
export async function takeProfile(owner: string | null | undefined, name: string, boxId: string, runtime: string): Promise<void> {
  const key = owner ?? SERVER_OWNER;
  const now = Date.now();
  for (let round = 0; round < 3; round++) {
    const row = await db().selectFrom("browser_profile").selectAll().where("owner", "=", key).where("name", "=", name).executeTakeFirst();
    if (!row) {
      const made = await db()
        .insertInto("browser_profile")
        .values({ owner: key, name, runtime, volume: newProfileVolume(owner, name), holder: boxId, created_at_ms: now, last_used_ms: now })
        .onConflict((oc) => oc.columns(["owner", "name"]).doNothing())
        .executeTakeFirst();
      if (Number(made.numInsertedOrUpdatedRows ?? 0) === 1) return;
      continue;
    }
    const holder = await liveHolder(row.holder);
    if (holder && holder !== boxId) {
      throw new ApiError("denied", `browser profile "${name}" is held by box ${holder}; remove that box first`, { retryable: true });
    }
    refuseOversize(name, row.size_bytes);
    let update = db().updateTable("browser_profile").set({ holder: boxId, last_used_ms: now }).where("owner", "=", key).where("name", "=", name);
    update = row.holder === null ? update.where("holder", "is", null) : update.where("holder", "=", row.holder);
    const done = await update.executeTakeFirst();
    if (Number(done.numUpdatedRows) === 1) return;
  }
  throw new ApiError("denied", `browser profile "${name}" is being taken by another box`, { retryable: true });
}

export async function listProfiles(owner: string | null | undefined): Promise<ProfileJson[]> {
  const rows = await db().selectFrom("browser_profile").selectAll().where("owner", "=", owner ?? SERVER_OWNER).orderBy("name").execute();
  const docker = localDocker();
  return Promise.all(
    rows.map(async (r) => {
      const held_by = await liveHolder(r.holder);
      // A held profile's box makes its volume at create; an engine that does not answer says nothing.
      const data_missing = !held_by && !!docker && !(await docker.hasVolume(r.volume).catch(() => true));
      return {
        name: r.name,
        runtime: r.runtime,
        created_at_ms: Number(r.created_at_ms),
        last_used_ms: Number(r.last_used_ms),
        held_by,
        size_bytes: r.size_bytes === null ? null : Number(r.size_bytes),
        data_missing,
      };
    }),
  );
}

/**
 * Removes a profile and its volume; refused while a live box holds it. The volume goes first: the
 * engine refuses while any container uses it (another server's on this engine, a box container
 * whose removal failed), and then the profile is kept, listed and removable later, rather than
 * dropped from the list with its data left for the next box of that name.
 */
export async function deleteProfile(owner: string | null | undefined, name: string): Promise<{ name: string; deleted: true }> {
  // Not ProfileNameSchema: a name only of dots made before it was refused can still be removed
  // from the console's Profiles page.
  if (!PROFILE_NAME_CHARS.test(name)) throw badRequest(`name: "${name.slice(0, 80)}" cannot be a profile's name (${PROFILE_NAME_RULE})`);
  const key = owner ?? SERVER_OWNER;
  const row = await db().selectFrom("browser_profile").selectAll().where("owner", "=", key).where("name", "=", name).executeTakeFirst();
  if (!row) throw notFound(`no browser profile named "${name}"`);
  const holder = await liveHolder(row.holder);
  if (holder) throw new ApiError("denied", `browser profile "${name}" is held by box ${holder}; remove that box first`, { retryable: true });
  const docker = localDocker();
  if (docker && (await docker.removeVolume(row.volume)) === "in_use") {
    throw new ApiError("denied", `browser profile "${name}" is not removed: its volume ${row.volume} is in use by a container on the engine (another server's box, or a container left behind); try again once it is gone`, {
      retryable: true,
    });
  }
  // Only the row as read: a box that took the profile meanwhile keeps it (on a fresh volume).
  let del = db().deleteFrom("browser_profile").where("owner", "=", key).where("name", "=", name);
  del = row.holder === null ? del.where("holder", "is", null) : del.where("holder", "=", row.holder);
  if (Number((await del.executeTakeFirst()).numDeletedRows) !== 1) {
    throw new ApiError("denied", `browser profile "${name}" was just taken by a box`, { retryable: true });
  }
  return { name, deleted: true };
}
