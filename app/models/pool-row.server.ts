import { randomBytes } from "node:crypto";
import { DEFAULT_RUNTIME } from "~/runtime/index.server";
import { SERVER_ID } from "~/utils/cluster.server";
import { db } from "~/utils/db.server";
import { env } from "~/utils/env.server";
import type { BoxRow } from "./box-record.server";
import { queuedStart } from "./box-start.server";
import { MAX_LIFETIME_SECS, type NormalPlacement, type NormalSpec, boxMemory, normalizePlacement, normalizeSpec, specDigest } from "./spec.server";

// What the warm pool (pool.server.ts) keeps: the specs HOLM_POOL names, the placement its boxes
// get, and the record of a new pool box.

/** This server's pool boxes, starting or ready. */
export async function poolRows(): Promise<BoxRow[]> {
  return db()
    .selectFrom("box")
    .selectAll()
    .where("pooled", "=", 1)
    .where("server_id", "=", SERVER_ID)
    .where("removed_at_ms", "is", null)
    .where("state", "in", ["starting", "ready"])
    .execute();
}

/** The record of a new warm-pool box (pool.server.ts): unowned, starting, in this server's pool. */
export function poolRow(digest: string, spec: NormalSpec, placement: NormalPlacement, now: number): BoxRow {
  return {
    id: `box_${randomBytes(16).toString("hex")}`,
    owner: null,
    runtime: placement.runtime,
    runtime_ref: null,
    spec_digest: digest,
    spec_json: JSON.stringify(spec),
    placement_json: JSON.stringify(placement),
    image: null,
    state: "starting",
    reason: null,
    screens: spec.desktop.screens,
    width: spec.desktop.width,
    height: spec.desktop.height,
    persistent: 0,
    created_at_ms: now,
    expires_at_ms: now + placement.expires_after_secs * 1000,
    idle_timeout_secs: null,
    last_used_ms: now,
    removed_at_ms: null,
    desktop: 1,
    name: null,
    labels_json: null,
    created_by: null,
    created_by_name: null,
    start_json: JSON.stringify(queuedStart(now)),
    pooled: 1,
    record_takeovers: 0,
    // Each server keeps its own pool (ADR 0021): another server neither counts nor hands it out.
    server_id: SERVER_ID,
  };
}

/** A spec HOLM_POOL keeps boxes of, and how many. */
export interface Entry {
  key: string;
  digest: string;
  spec?: NormalSpec;
  size: number;
}

/** The placement of a pool box until its claim sets the caller's. */
export function poolPlacement(): NormalPlacement {
  return {
    ...normalizePlacement({}, DEFAULT_RUNTIME),
    expires_after_secs: MAX_LIFETIME_SECS,
  };
}

/** What HOLM_POOL asks for (none without it). */
export async function entries(): Promise<Entry[]> {
  const out: Entry[] = [];
  for (const { key, size } of env().HOLM_POOL ?? []) {
    if (key === "default") {
      const spec = normalizeSpec();
      out.push({ key, digest: specDigest(spec), spec, size });
      continue;
    }
    // A digest names a spec only once the server has seen a box of it (ADR 0014).
    const seen = await db().selectFrom("box").select("spec_json").where("spec_digest", "=", key).orderBy("created_at_ms", "desc").executeTakeFirst();
    out.push({
      key,
      digest: key,
      spec: seen ? (JSON.parse(seen.spec_json) as NormalSpec) : undefined,
      size,
    });
  }
  return out;
}

/** Whether a caller's placement gets the container a pool box has (lifetimes are set at claim). */
export function fitsPool(p: NormalPlacement): boolean {
  const pool = poolPlacement();
  return p.runtime === pool.runtime && boxMemory(p) === boxMemory(pool) && !p.cpus && !p.persistent && !p.profile;
}
