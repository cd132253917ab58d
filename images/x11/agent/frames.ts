// Frames: X GetImage on the warm connection, a hash of the raw pixels, and a PNG only when the
// caller does not already have that hash. An unchanged frame never touches zlib.
import crypto from "node:crypto";
import type { Screen, Session } from "./screen";
import { getImage, queryPointer, xfixesGetCursorImage } from "./x11-requests";
import { encodePng } from "./png";
import { findWindow } from "./windows";
import { AgentError } from "./errors";
import { sleep } from "./util";
import { waylandFrame, waylandScreenHash } from "./wayland-views";

export type { CaptureOptions, Frame, Rect } from "./frame-types";
import type { CaptureOptions, Frame, Rect } from "./frame-types";

const PNG_CACHE_SIZE = 4;

async function targetRect(s: Session, opts: CaptureOptions): Promise<Rect> {
  let r: Rect = { x: 0, y: 0, width: s.width, height: s.height };
  if (opts.window !== undefined) {
    const w = await findWindow(s, opts.window);
    if (w.minimised) throw new AgentError("failed", `window ${w.id} is minimised`);
    r = { x: w.x, y: w.y, width: w.width, height: w.height };
  }
  if (opts.region) {
    const g = opts.region;
    r = { x: r.x + g.x, y: r.y + g.y, width: g.width, height: g.height };
    if (opts.window === undefined && (g.x < 0 || g.y < 0 || g.x + g.width > s.width || g.y + g.height > s.height)) {
      throw new AgentError("bad_request", `region ${g.x},${g.y} ${g.width}×${g.height} is not inside the ${s.width}×${s.height} screen`);
    }
  }
  // Clip to the screen: GetImage of the root fails on anything outside it.
  const x0 = Math.max(0, r.x);
  const y0 = Math.max(0, r.y);
  const x1 = Math.min(s.width, r.x + r.width);
  const y1 = Math.min(s.height, r.y + r.height);
  if (x1 <= x0 || y1 <= y0) throw new AgentError("bad_request", "the area to capture is not on the screen");
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}

/** Raw 32-bit BGRX pixels of `r`, rows packed (width × 4 bytes). */
export async function grab(s: Session, r: Rect): Promise<Buffer> {
  const fmt = s.conn.setup.formats.find((f) => f.depth === s.conn.setup.rootDepth);
  if (!fmt || fmt.bitsPerPixel !== 32 || s.conn.setup.imageByteOrder !== 0) {
    throw new AgentError("unsupported", `screen depth ${s.conn.setup.rootDepth} (${fmt?.bitsPerPixel} bpp) is not 24/32-bit little-endian`);
  }
  const img = await getImage(s.conn, s.root, r.x, r.y, r.width, r.height);
  return img.data;
}

/** Composites the cursor image (premultiplied ARGB) over BGRX pixels of `r`. */
async function drawPointer(s: Session, px: Buffer, r: Rect): Promise<void> {
  if (s.xfixes === null) {
    const p = await queryPointer(s.conn, s.root);
    crosshair(px, r, p.x, p.y);
    return;
  }
  const c = await xfixesGetCursorImage(s.conn, s.xfixes);
  const ox = c.x - c.xhot - r.x;
  const oy = c.y - c.yhot - r.y;
  for (let cy = 0; cy < c.height; cy++) {
    const y = oy + cy;
    if (y < 0 || y >= r.height) continue;
    for (let cx = 0; cx < c.width; cx++) {
      const x = ox + cx;
      if (x < 0 || x >= r.width) continue;
      const argb = c.argb.readUInt32LE((cy * c.width + cx) * 4);
      const a = argb >>> 24;
      if (a === 0) continue;
      const o = (y * r.width + x) * 4;
      const inv = 255 - a;
      px[o] = Math.min(255, (argb & 0xff) + ((px[o] * inv) >> 8));
      px[o + 1] = Math.min(255, ((argb >>> 8) & 0xff) + ((px[o + 1] * inv) >> 8));
      px[o + 2] = Math.min(255, ((argb >>> 16) & 0xff) + ((px[o + 2] * inv) >> 8));
    }
  }
}

function crosshair(px: Buffer, r: Rect, x: number, y: number): void {
  for (let d = -8; d <= 8; d++) {
    for (const [xx, yy] of [[x + d, y], [x, y + d]]) {
      const lx = xx - r.x;
      const ly = yy - r.y;
      if (lx < 0 || ly < 0 || lx >= r.width || ly >= r.height) continue;
      const o = (ly * r.width + lx) * 4;
      px[o] = 0;
      px[o + 1] = 0;
      px[o + 2] = 255;
    }
  }
}

/** BGRX → packed RGB at `dw`×`dh`: box average when shrinking, nearest when growing. */
export function toRgb(px: Buffer, sw: number, sh: number, dw: number, dh: number): Buffer {
  const out = Buffer.allocUnsafe(dw * dh * 3);
  if (dw === sw && dh === sh) {
    let o = 0;
    for (let i = 0, n = sw * sh * 4; i < n; i += 4) {
      out[o++] = px[i + 2];
      out[o++] = px[i + 1];
      out[o++] = px[i];
    }
    return out;
  }
  const x0 = new Int32Array(dw);
  const x1 = new Int32Array(dw);
  for (let x = 0; x < dw; x++) {
    x0[x] = Math.min(sw - 1, Math.floor((x * sw) / dw));
    x1[x] = Math.max(x0[x] + 1, Math.min(sw, Math.floor(((x + 1) * sw) / dw)));
  }
  let o = 0;
  for (let y = 0; y < dh; y++) {
    const y0 = Math.min(sh - 1, Math.floor((y * sh) / dh));
    const y1 = Math.max(y0 + 1, Math.min(sh, Math.floor(((y + 1) * sh) / dh)));
    for (let x = 0; x < dw; x++) {
      let r = 0;
      let g = 0;
      let b = 0;
      for (let yy = y0; yy < y1; yy++) {
        let i = (yy * sw + x0[x]) * 4;
        for (let xx = x0[x]; xx < x1[x]; xx++, i += 4) {
          b += px[i];
          g += px[i + 1];
          r += px[i + 2];
        }
      }
      const n = (y1 - y0) * (x1[x] - x0[x]);
      out[o++] = (r / n) | 0;
      out[o++] = (g / n) | 0;
      out[o++] = (b / n) | 0;
    }
  }
  return out;
}

/**
 * The last read's hash, when it was of the same capture and its pixels are byte-equal to `px`
 * (a 4 MB memcmp, well under a millisecond; it stops at the first difference): the common case
 * of a screen drawn again as it was is named without hashing or encoding anything.
 */
function lastHashOf(screen: Screen, key: string, px: Buffer): string | undefined {
  const last = screen.lastPixels;
  return last && last.key === key && last.px.equals(px) ? last.hash : undefined;
}

function keep(screen: Screen, key: string, px: Buffer, hash: string): string {
  screen.lastPixels = { key, px, hash };
  return hash;
}

/**
 * The pixels of `r` (`key` names the area and how it is shown), and their hash when they are the
 * last read's. The last read is used again when it was of the same area and nothing was drawn on
 * the screen since (damage.ts): one round trip instead of reading megabytes. A read with the
 * pointer drawn in is always made anew (moving the pointer draws nothing on the screen).
 */
async function pixelsOf(screen: Screen, s: Session, r: Rect, key: string, pointer: boolean): Promise<{ px: Buffer; hash: string | undefined }> {
  const last = screen.lastPixels;
  if (!pointer && s.damage && last && last.key === key && (await s.damage.unchangedSinceArm())) return { px: last.px, hash: last.hash };
  s.damage?.arm();
  try {
    const px = await grab(s, r);
    if (pointer) await drawPointer(s, px, r);
    return { px, hash: lastHashOf(screen, key, px) };
  } catch (err) {
    s.damage?.spoil(); // armed but nothing read: the next read must not trust the last pixels
    throw err;
  }
}

export async function captureFrame(screen: Screen, opts: CaptureOptions, have?: string): Promise<Frame> {
  if (screen.isWayland) return waylandFrame(screen, await screen.wayland(), opts, have);
  const s = await screen.session();
  const scale = opts.scale ?? 100;
  if (!(scale >= 1 && scale <= 400)) throw new AgentError("bad_request", `scale ${scale} is not within 1–400`);
  const r = await targetRect(s, opts);
  const width = Math.max(1, Math.round((r.width * scale) / 100));
  const height = Math.max(1, Math.round((r.height * scale) / 100));
  const key = `${r.x},${r.y},${r.width},${r.height},${width},${height},${opts.pointer ? 1 : 0}`;
  const read = await pixelsOf(screen, s, r, key, opts.pointer === true);
  if (have && have === read.hash) return { hash: read.hash, unchanged: true, width, height };
  const cached = read.hash === undefined ? undefined : screen.pngCache.get(read.hash);
  const png = cached ?? (width === r.width && height === r.height
    ? await screen.framePng.encode(read.px, width, height)
    : await encodePng(toRgb(read.px, r.width, r.height, width, height), width, height));
  // New pixels are named by their PNG (the encoder is deterministic: the same pixels make the
  // same bytes), a twentieth of their size to hash: 2.5 ms less on every changed frame.
  const hash = read.hash ?? keep(screen, key, read.px, crypto.createHash("sha1").update(`${key};png;`).update(png).digest("hex"));
  if (!cached) {
    screen.pngCache.set(hash, png);
    while (screen.pngCache.size > PNG_CACHE_SIZE) screen.pngCache.delete(screen.pngCache.keys().next().value as string);
  }
  // Pixels the caller already had, back after others: encoded to be named, and still unchanged.
  if (have && have === hash) return { hash, unchanged: true, width, height };
  return { hash, unchanged: false, png_base64: png.toString("base64"), width, height };
}

/** Hash of the whole screen's pixels, for change detection only. */
export async function screenHash(screen: Screen): Promise<string> {
  if (screen.isWayland) return waylandScreenHash(screen, await screen.wayland());
  const s = await screen.session();
  const key = `${s.width},${s.height},still`;
  const read = await pixelsOf(screen, s, { x: 0, y: 0, width: s.width, height: s.height }, key, false);
  return read.hash ?? keep(screen, key, read.px, crypto.createHash("sha1").update(`${key};`).update(read.px).digest("hex"));
}

/** Waits until the screen has not changed for `settleMs`, or fails with `timeout` after `withinMs`. */
export async function waitStill(screen: Screen, settleMs: number, withinMs: number): Promise<{ still: true; waited_ms: number }> {
  const start = Date.now();
  let last = await screenHash(screen);
  let since = Date.now();
  const interval = Math.max(10, Math.min(50, Math.floor(settleMs / 4)));
  for (;;) {
    if (Date.now() - since >= settleMs) return { still: true, waited_ms: Date.now() - start };
    if (Date.now() - start >= withinMs) throw new AgentError("timeout", `the screen kept changing for ${withinMs} ms`);
    await sleep(interval);
    const h = await screenHash(screen);
    if (h !== last) {
      last = h;
      since = Date.now();
    }
  }
}
