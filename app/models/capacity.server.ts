import { readFileSync } from "node:fs";
import { ApiError } from "~/utils/api-error.server";
import { db } from "~/utils/db.server";
import { env } from "~/utils/env.server";
import { parseBytes } from "~/utils/size";
import { diskRefusal } from "./disk-space.server";

// Admission of new boxes (ADR 0016). A box must never fail to start because the machine is busy:
// a start the machine cannot hold is refused before anything is launched, with 503 `unavailable`
// (retryable), instead of launching it and losing it. Two limits: a count of boxes holding a
// container (HOLM_MAX_LIVE_BOXES, when set) and the host's memory: MemAvailable, less what the
// boxes still starting will take, must leave HOLM_BOX_ADMIT_MEMORY above HOLM_HOST_MEMORY_RESERVE.
// And the disk: none while the disk watch last found it below HOLM_DISK_RESERVE (ADR 0034).
// Starts that are admitted wait for a start slot (box-launch.server.ts), never for a deadline.

/** States in which a box holds (or is about to hold) a container and its memory. */
const HOLDING = ["starting", "ready", "paused", "unreachable"] as const;

/** Stopped boxes this server is resuming (admitResume): counted as starting until released. */
let resuming = 0;

/** The host's available memory in bytes, or undefined where /proc/meminfo does not say. */
export function hostMemAvailable(): number | undefined {
  try {
    const kib = /^MemAvailable:\s+(\d+) kB/m.exec(readFileSync("/proc/meminfo", "utf8"))?.[1];
    return kib ? Number(kib) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

export interface Capacity {
  live: number;
  starting: number;
  maxLive: number;
  memAvailable?: number;
  /** Bytes left for new boxes after the reserve and the boxes still starting. */
  memFree?: number;
  admitBytes: number;
  /** Why the disk takes no new box now (the disk watch's last look); undefined when it has room. */
  disk?: string;
}

export async function capacity(): Promise<Capacity> {
  const e = env();
  const rows = await db()
    .selectFrom("box")
    .select(["state", (eb) => eb.fn.countAll<number>().as("n")])
    .where("removed_at_ms", "is", null)
    .where("state", "in", [...HOLDING])
    .groupBy("state")
    .execute();
  // A stopped box being resumed holds its container again before its row says so.
  const live = rows.reduce((a, r) => a + Number(r.n), 0) + resuming;
  const starting = Number(rows.find((r) => r.state === "starting")?.n ?? 0) + resuming;
  const admitBytes = parseBytes(e.HOLM_BOX_ADMIT_MEMORY);
  const memAvailable = hostMemAvailable();
  // A starting box has not taken its memory yet: count it as taken already.
  const memFree = memAvailable === undefined ? undefined : memAvailable - starting * admitBytes - parseBytes(e.HOLM_HOST_MEMORY_RESERVE);
  return { live, starting, maxLive: e.HOLM_MAX_LIVE_BOXES, memAvailable, memFree, admitBytes, disk: diskRefusal() };
}

const MIB = 1024 ** 2;

/** Why a new box cannot be admitted now, in words; undefined when it can. */
export function refusal(c: Capacity): string | undefined {
  if (c.maxLive > 0 && c.live >= c.maxLive) {
    return `this server is at its most live boxes (${c.live} of HOLM_MAX_LIVE_BOXES=${c.maxLive}); try again once one is removed`;
  }
  if (c.disk) return c.disk;
  if (c.memFree !== undefined && c.memFree < c.admitBytes) {
    return (
      `this machine has no memory for another box (${Math.round(c.memAvailable! / MIB)} MiB available, ` +
      `${c.starting} box(es) still starting, a box needs ${Math.round(c.admitBytes / MIB)} MiB above the reserve); try again later`
    );
  }
  return undefined;
}

// Checks and inserts one at a time: 50 creates at once must not all pass the same count.
let chain: Promise<unknown> = Promise.resolve();

/**
 * Runs `insert` (which records the box as `starting`) only if the server can hold one more box;
 * else throws 503 `unavailable`, retryable. Serialized, so concurrent creates see each other.
 */
export function admit<T>(insert: () => Promise<T>): Promise<T> {
  const run = chain.then(async () => {
    const why = refusal(await capacity());
    if (why) throw new ApiError("unavailable", why, { retryable: true });
    return insert();
  });
  chain = run.catch(() => undefined);
  return run;
}

/**
 * Admits the resume of a stopped box as a new box is admitted (a stopped box is not counted, and
 * its resume brings a container back): 503 `unavailable`, retryable, when the server is full.
 * Counted as a starting box from then on; the returned function ends that, once the box's row
 * is `ready` (counted by its state) or the resume failed. Calling it again does nothing.
 */
export async function admitResume(): Promise<() => void> {
  await admit(async () => {
    resuming++;
  });
  let held = true;
  return () => {
    if (held) resuming--;
    held = false;
  };
}
