import { othersCounts, shareCounts } from "~/utils/cluster.server";
import { EventEmitter } from "node:events";
import { VIEWER_CLOSE } from "~/protocol/viewer-socket";
import { type BoxJson, boxChanges } from "./box.server";
import type { ViewerMode } from "./ticket.server";

// The live viewer connections, per box and screen: who watches, who drives. The viewer socket
// registers each connection; routes read the counts; box removal and takeover close them.

export interface ViewerConnection {
  boxId: string;
  screen: number;
  mode: ViewerMode;
  /** From the ticket: `server`, `user:<id>` or `key:<id>`. */
  issuer: string;
  /** The workspace that owns the box, and the console session the ticket was minted in: what
   * the issuer's access is checked against again when it changes (server/revocation.ts). */
  owner?: string | null;
  sessionId?: string;
  /** When the issuer's access ends by itself (a key's expiry): the connection closes then. */
  untilMs?: number;
  openedAtMs: number;
  /** Ends the connection with a WebSocket close code (4xxx) and reason. */
  close(code: number, reason: string): void;
}

export interface ViewerCounts {
  /** Every open viewer connection on the screen (a driver watches too). */
  watching: number;
  /** Connections in control mode. */
  driving: number;
  /** Who drives: one issuer per control connection (repeats when one issuer has several). */
  drivers: string[];
}

export interface ViewersChange extends ViewerCounts {
  boxId: string;
  screen: number;
}

export interface ViewerInput {
  boxId: string;
  screen: number;
  issuer: string;
  kind: "pointer" | "key" | "cut";
  detail: Record<string, number>;
}

const live = new Map<string, Set<ViewerConnection>>();
const events = new EventEmitter();
events.setMaxListeners(0);

const keyOf = (boxId: string, screen: number) => `${boxId}/${screen}`;

export function viewers(boxId: string, screen: number): ViewerCounts {
  const set = live.get(keyOf(boxId, screen));
  const drivers: string[] = [];
  for (const c of set ?? []) if (c.mode === "control") drivers.push(c.issuer);
  return { watching: set?.size ?? 0, driving: drivers.length, drivers };
}

/**
 * The counts of every server (docs/decisions/0021): this one's, and the others' as they shared
 * them. `drivers` stays this server's own (what keeps a takeover alive here).
 */
export async function allViewers(boxId: string, screen: number): Promise<ViewerCounts> {
  const here = viewers(boxId, screen);
  const [watching = 0, driving = 0] = await othersCounts(`viewers:${keyOf(boxId, screen)}`, 2);
  return { ...here, watching: here.watching + watching, driving: here.driving + driving };
}

function changed(boxId: string, screen: number) {
  const counts = viewers(boxId, screen);
  shareCounts(`viewers:${keyOf(boxId, screen)}`, [counts.watching, counts.driving]);
  events.emit("change", { boxId, screen, ...counts } satisfies ViewersChange);
}

/** Adds a live connection; returns the function that removes it (safe to call twice). */
export function registerViewer(conn: ViewerConnection): () => void {
  const k = keyOf(conn.boxId, conn.screen);
  let set = live.get(k);
  if (!set) live.set(k, (set = new Set()));
  set.add(conn);
  changed(conn.boxId, conn.screen);
  // setTimeout takes at most 2^31-1 ms (24.8 days): an expiry further off than that is not
  // timed (a connection open that long still closes when the key is revoked).
  const wait = conn.untilMs === undefined ? undefined : Math.max(0, conn.untilMs - Date.now());
  const expiry =
    wait === undefined || wait > 2 ** 31 - 1
      ? undefined
      : setTimeout(() => conn.close(VIEWER_CLOSE.badTicket, "the API key that opened this has expired"), wait);
  expiry?.unref();
  return () => {
    clearTimeout(expiry);
    const cur = live.get(k);
    if (!cur?.delete(conn)) return;
    if (cur.size === 0) live.delete(k);
    changed(conn.boxId, conn.screen);
  };
}

/** Each screen's direct sockets (ADR 0029) as the server last heard from its box (every 2 s). */
const direct = new Map<string, { watching: number; driving: number }>();

/**
 * What a box said is open on its direct sockets (`null`: the box no longer serves any, or is not
 * running). A screen whose counts changed is announced to `onDirectViewersChange` listeners.
 */
export function noteDirectViewers(boxId: string, open: { screen: number; mode: string }[] | null): void {
  const next = new Map<string, { watching: number; driving: number }>();
  for (const v of open ?? []) {
    const k = keyOf(boxId, v.screen);
    const c = next.get(k) ?? { watching: 0, driving: 0 };
    c.watching++;
    if (v.mode === "control") c.driving++;
    next.set(k, c);
  }
  const touched = new Set([...[...direct.keys()].filter((k) => k.startsWith(`${boxId}/`)), ...next.keys()]);
  for (const k of touched) {
    const was = direct.get(k);
    const now = next.get(k);
    if (was?.watching === now?.watching && was?.driving === now?.driving) continue;
    if (now) direct.set(k, now);
    else direct.delete(k);
    events.emit("direct", { boxId, screen: Number(k.slice(boxId.length + 1)) });
  }
}

/** The boxes whose direct sockets are counted now. */
export function directViewerBoxes(): string[] {
  return [...new Set([...direct.keys()].map((k) => k.slice(0, k.lastIndexOf("/"))))];
}

/** A screen's direct sockets as last heard (zero when none, or not heard of). */
export function directViewersOf(boxId: string, screen: number): { watching: number; driving: number } {
  return direct.get(keyOf(boxId, screen)) ?? { watching: 0, driving: 0 };
}

/** Listens to changes of a screen's direct socket counts; returns the function that stops listening. */
export function onDirectViewersChange(listener: (change: { boxId: string; screen: number }) => void): () => void {
  events.on("direct", listener);
  return () => events.off("direct", listener);
}

/** Listens to count changes on any screen; returns the function that stops listening. */
export function onViewersChange(listener: (change: ViewersChange) => void): () => void {
  events.on("change", listener);
  return () => events.off("change", listener);
}

/** Coarse person input from control connections (never key values), for traces and idle time. */
export function onViewerInput(listener: (input: ViewerInput) => void): () => void {
  events.on("input", listener);
  return () => events.off("input", listener);
}

export function reportViewerInput(input: ViewerInput) {
  events.emit("input", input);
}

/** Every open viewer connection (a copy: closing one while iterating is safe). */
export function openViewers(): ViewerConnection[] {
  return [...live.values()].flatMap((set) => [...set]);
}

/**
 * Closes the viewer connections of a box (one screen, or all), optionally only those in one
 * mode (a takeover ending closes the drivers) and those `which` picks. Returns how many closed.
 */
export function closeViewers(
  boxId: string,
  screen?: number,
  opts: { mode?: ViewerMode; code?: number; reason?: string; which?: (c: ViewerConnection) => boolean } = {},
): number {
  let n = 0;
  for (const [k, set] of [...live]) {
    if (!k.startsWith(`${boxId}/`)) continue;
    for (const c of [...set]) {
      if (screen !== undefined && c.screen !== screen) continue;
      if (opts.mode && c.mode !== opts.mode) continue;
      if (opts.which && !opts.which(c)) continue;
      c.close(opts.code ?? VIEWER_CLOSE.normal, opts.reason ?? "closed by the server");
      n++;
    }
  }
  return n;
}

// A box that stops running takes its viewers with it, even before the VNC side notices.
boxChanges.on("change", (box: BoxJson) => {
  if (box.state === "gone") closeViewers(box.id, undefined, { code: VIEWER_CLOSE.noBox, reason: "the box was removed" });
  else if (box.state === "stopped" || box.state === "failed") {
    closeViewers(box.id, undefined, { code: VIEWER_CLOSE.notReady, reason: `the box is ${box.state}` });
  }
});
