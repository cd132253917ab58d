import { agentCall } from "~/protocol/agent";
import { db } from "~/utils/db.server";
import { type Actor, ownerOf } from "./actor";
import { type BoxJson, type BoxRow, boxAddress, boxChanges, rememberAddress, runtimeOf, visibleRow } from "./box-record.server";
import type { RunningBox } from "./box.server";
import { callAgent } from "./screen.server";
import { log } from "~/utils/log.server";

// The box list's thumbnails: a small picture of screen 0, made cheap for the server. The box
// scales it (the agent's `scale`) and says with `have` when nothing changed since the picture we
// hold, so an unchanged screen costs one small signed request and no image bytes; we ask a box at
// most once per FRESH_MS however many people look (one capture in flight per box), and answer
// everyone from the picture kept here, named by the agent's hash (the ETag, so a browser that
// has it gets 304). A list asks for the ETags of all its visible rows in one request
// (thumbnailEtags) and fetches a picture only when its ETag changed, by a URL naming that ETag
// (cached by the browser for good), so an unchanged screen costs the server no request per row.
// A paused or stopped box is not asked (a paused one would not answer): it shows the last
// picture kept, if any. Thumbnails never count as use for the idle timeout.

/** About this wide (px); the agent scales by whole percents. */
export const THUMB_WIDTH = 320;
/** The longest a kept picture is trusted before a ready box is asked again. */
export const FRESH_MS = 3000;
/** After a failed capture, the box is left alone this long (it may be busy or going away). */
const FAILED_BACKOFF_MS = 10_000;
const CAPTURE_TIMEOUT_MS = 5000;
/** Pictures kept (one per box, ~10–60 KB each); the least recently captured goes first. */
const MAX_KEPT = 512;

interface Kept {
  /** The agent's hash of the scaled capture: its change token and our ETag. */
  token: string;
  png: Buffer;
  captured_ms: number;
  checked_ms: number;
}

export interface Thumbnail {
  etag: string;
  png: Buffer;
  /** When this picture was taken (the screen may have been unchanged since). */
  captured_ms: number;
}

const kept = new Map<string, Kept>();
const inflight = new Map<string, Promise<void>>();
const failedAt = new Map<string, number>();

// A removed box's picture goes with it.
boxChanges.on("change", (box: BoxJson) => {
  if (box.state === "gone") {
    kept.delete(box.id);
    failedAt.delete(box.id);
  }
});

/** The scale (percent) that makes a `width`-wide screen about THUMB_WIDTH wide. */
export function thumbScale(width: number): number {
  return Math.max(1, Math.min(100, Math.round((THUMB_WIDTH * 100) / width)));
}

/**
 * The latest picture of the box's screen 0 for anyone who sees the box (any role), refreshed
 * first when the box is ready and the kept one is older than FRESH_MS; undefined when there is
 * none yet (a starting box, or a stopped one since the server started).
 */
export async function boxThumbnail(actor: Actor, id: string): Promise<Thumbnail | undefined> {
  const row = await visibleRow(actor, id);
  if (row.state === "ready") await refresh(row);
  const k = kept.get(row.id);
  return k && { etag: `"${k.token}"`, png: k.png, captured_ms: k.captured_ms };
}

/** The most boxes one list asks about at once. */
export const THUMBS_MAX = 100;

/**
 * The current ETag of each of these boxes' thumbnails (null: no picture yet), refreshing ready
 * ones as boxThumbnail does; ids the actor does not see (another workspace's, removed, unknown)
 * are left out. One query for the rows, the captures in parallel.
 */
export async function thumbnailEtags(actor: Actor, ids: string[]): Promise<Record<string, string | null>> {
  const wanted = [...new Set(ids)].filter((id) => /^box_[0-9a-f]{8,64}$/.test(id)).slice(0, THUMBS_MAX);
  if (wanted.length === 0) return {};
  let q = db().selectFrom("box").selectAll().where("id", "in", wanted).where("pooled", "=", 0).where("removed_at_ms", "is", null).where("state", "!=", "gone");
  const owner = ownerOf(actor);
  if (owner !== undefined) q = q.where("owner", "=", owner);
  const rows = await q.execute();
  await Promise.all(rows.filter((r) => r.state === "ready").map(refresh));
  const out: Record<string, string | null> = {};
  for (const r of rows) {
    const k = kept.get(r.id);
    out[r.id] = k ? `"${k.token}"` : null;
  }
  return out;
}

function refresh(row: BoxRow): Promise<void> {
  const now = Date.now();
  const k = kept.get(row.id);
  if (k && now - k.checked_ms < FRESH_MS) return Promise.resolve();
  if (now - (failedAt.get(row.id) ?? 0) < FAILED_BACKOFF_MS) return Promise.resolve();
  let p = inflight.get(row.id);
  if (!p) {
    p = capture(row).finally(() => inflight.delete(row.id));
    inflight.set(row.id, p);
  }
  return p;
}

async function runningBox(row: BoxRow): Promise<RunningBox | undefined> {
  let address = await boxAddress(row.id);
  if (!address && row.runtime_ref) {
    address = (await runtimeOf(row).inspect(row.runtime_ref)).address;
    if (address) rememberAddress(row.id, address);
  }
  if (!address) return undefined;
  return { id: row.id, owner: row.owner, screens: row.screens, width: row.width, height: row.height, address };
}

async function capture(row: BoxRow): Promise<void> {
  try {
    const box = await runningBox(row);
    if (!box) return;
    const prev = kept.get(row.id);
    const query = { scale: thumbScale(row.width), ...(prev ? { have: prev.token } : {}) };
    const frame = await callAgent<{ hash: string; unchanged: boolean; png_base64?: string }>(
      box,
      agentCall("frame", { n: 0 }, query),
      undefined,
      CAPTURE_TIMEOUT_MS,
      "bulk",
    );
    const now = Date.now();
    failedAt.delete(row.id);
    if (frame.unchanged && prev) {
      prev.checked_ms = now;
      return;
    }
    if (!frame.png_base64) return;
    kept.delete(row.id);
    kept.set(row.id, { token: frame.hash, png: Buffer.from(frame.png_base64, "base64"), captured_ms: now, checked_ms: now });
    while (kept.size > MAX_KEPT) kept.delete(kept.keys().next().value!);
  } catch (err) {
    // Logged once per backoff window at most: a box that is going away should not flood the log.
    if (!failedAt.has(row.id)) log.error({ err }, `thumbnail of ${row.id} failed`);
    failedAt.set(row.id, Date.now());
  }
}
