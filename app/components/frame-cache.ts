import { useEffect, useRef, useState } from "react";

// The frames of a trace in the browser: fetched only when wanted (around the slider, and while the
// page is idle a wider ring of bytes around it), kept as PNG blobs, decoded off the main thread
// into ImageBitmaps at the size they are shown (a bounded set near the slider) plus a small
// thumbnail for the filmstrip's. Its own module because it owns the bytes and bitmaps of the
// frames (memory, fetches, decodes); the views (trace-frames.tsx) only draw what it has, and
// trace-follow.ts decides what it should load.

export const THUMB_WIDTH = 160;

interface CacheOptions {
  /** Fetches and decodes at once. More than a few only queue behind each other (measured). */
  concurrency?: number;
  /** Bytes of decoded frames kept (4 a pixel, at the size they are decoded to). */
  bitmapBudget?: number;
  /** PNG bytes kept in memory (refetches come from the HTTP cache anyway: the URLs are immutable). */
  maxBlobBytes?: number;
}

type Listener = (hash: string) => void;

export class FrameCache {
  private blobs = new Map<string, Blob>();
  private blobBytes = 0;
  private bitmaps = new Map<string, ImageBitmap>();
  private thumbs = new Map<string, ImageBitmap>();
  private inflight = new Set<string>();
  /** Fetches in flight (for a decode or only for the bytes), shared by whoever asks. */
  private fetching = new Map<string, Promise<Blob | undefined>>();
  /** Bytes to fetch while nothing is wanted (no decode), nearest first. */
  private background: string[] = [];
  private backgroundActive = 0;
  /** hash → HTTP status of a failed fetch; 404 stays (the frame was pruned), others clear after a while. */
  private failed = new Map<string, number>();
  private wanted: string[] = [];
  private wantedSet = new Set<string>();
  private thumbWanted = new Set<string>();
  private thumbing = new Set<string>();
  private listeners = new Set<Listener>();
  private active = 0;
  private closed = false;
  /** Decode to this width (the canvas's width in device pixels); 0: the frame's own size. */
  private decodeWidth = 0;
  private readonly concurrency: number;
  private readonly bitmapBudget: number;
  /** Decoded frames kept: the budget over one frame's bytes. */
  private maxBitmaps: number;
  private readonly maxBlobBytes: number;

  constructor(
    private readonly urlOf: (hash: string) => string,
    opts: CacheOptions = {},
  ) {
    this.concurrency = opts.concurrency ?? 6;
    this.bitmapBudget = opts.bitmapBudget ?? 256 * 1024 * 1024;
    this.maxBitmaps = this.capacity(1280, 800);
    this.maxBlobBytes = opts.maxBlobBytes ?? 96 * 1024 * 1024;
  }

  /** The decoded frame, if at hand (and marks it recently used). */
  bitmap(hash: string): ImageBitmap | undefined {
    const b = this.bitmaps.get(hash);
    if (b) {
      this.bitmaps.delete(hash);
      this.bitmaps.set(hash, b);
    }
    return b;
  }

  thumb(hash: string): ImageBitmap | undefined {
    return this.thumbs.get(hash);
  }

  /** How long loading a frame takes (fetch and decode, or decode alone), smoothed, in ms. */
  latencyMs = 30;

  /** The HTTP status when fetching the frame failed (404: no longer stored). */
  failure(hash: string): number | undefined {
    return this.failed.get(hash);
  }

  /**
   * Replaces what to load, most wanted first (what is loading carries on), and which of them
   * also need a thumbnail.
   */
  want(hashes: string[], thumbs: readonly string[] = []) {
    this.wanted = hashes;
    this.wantedSet = new Set(hashes);
    this.thumbWanted = new Set(thumbs);
    for (const h of thumbs) {
      const full = this.bitmaps.get(h);
      if (full) void this.makeThumb(h, full);
    }
    this.pump();
  }

  /** Fetches these frames' bytes (no decode) when nothing wanted is loading, in this order. */
  prefetch(hashes: string[]) {
    this.background = hashes;
    this.pump();
  }

  private async makeThumb(hash: string, full: ImageBitmap) {
    if (this.thumbs.has(hash) || this.thumbing.has(hash)) return;
    this.thumbing.add(hash);
    try {
      const h = Math.max(1, Math.round((THUMB_WIDTH * full.height) / full.width));
      const thumb = await createImageBitmap(full, { resizeWidth: THUMB_WIDTH, resizeHeight: h, resizeQuality: "medium" });
      if (this.closed) return thumb.close();
      this.thumbs.set(hash, thumb);
      while (this.thumbs.size > 1024) {
        const [k, v] = this.thumbs.entries().next().value as [string, ImageBitmap];
        this.thumbs.delete(k);
        v.close();
      }
      for (const fn of this.listeners) fn(hash);
    } catch {
      // The full frame was closed meanwhile: the next want() makes it.
    } finally {
      this.thumbing.delete(hash);
    }
  }

  /**
   * The width frames are decoded to, with the desktop's aspect. Growing it by more than a quarter
   * drops the decoded frames, so they are decoded again sharp.
   */
  setDecodeSize(width: number, aspect: number) {
    const w = Math.max(THUMB_WIDTH, Math.round(width));
    if (this.decodeWidth && w <= this.decodeWidth * 1.25 && w >= this.decodeWidth / 2) return;
    const grew = this.decodeWidth > 0 && w > this.decodeWidth;
    this.decodeWidth = w;
    this.aspect = aspect;
    this.maxBitmaps = this.capacity(w, Math.round(w * aspect));
    this.evict();
    if (grew) {
      for (const b of this.bitmaps.values()) b.close();
      this.bitmaps.clear();
      this.pump();
    }
  }
  private aspect = 0.625;

  private capacity(width: number, height: number): number {
    return Math.min(1024, Math.max(24, Math.floor(this.bitmapBudget / Math.max(1, width * height * 4))));
  }

  subscribe(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  close() {
    this.closed = true;
    for (const b of this.bitmaps.values()) b.close();
    for (const b of this.thumbs.values()) b.close();
    this.bitmaps.clear();
    this.thumbs.clear();
    this.blobs.clear();
    this.listeners.clear();
  }

  private pump() {
    for (const h of this.wanted) {
      if (this.active >= this.concurrency) return;
      if (this.bitmaps.has(h) || this.inflight.has(h) || this.failed.has(h)) continue;
      void this.load(h);
    }
    // Idle: the bytes of frames further out, one or two at a time, so a first move finds them here.
    for (const h of this.background) {
      if (this.active > 0 || this.backgroundActive >= 2) return;
      if (this.blobs.has(h) || this.fetching.has(h) || this.failed.has(h)) continue;
      if (this.blobBytes >= this.maxBlobBytes * 0.75) return;
      this.backgroundActive++;
      void this.blob(h).finally(() => {
        this.backgroundActive--;
        if (!this.closed) this.pump();
      });
    }
  }

  /** The frame's PNG bytes: kept, or fetched once (undefined when it failed). */
  private blob(hash: string): Promise<Blob | undefined> {
    const kept = this.blobs.get(hash);
    if (kept) return Promise.resolve(kept);
    let p = this.fetching.get(hash);
    if (!p) {
      p = (async () => {
        try {
          const res = await fetch(this.urlOf(hash), { credentials: "same-origin" });
          if (!res.ok) {
            this.fail(hash, res.status);
            return undefined;
          }
          const blob = await res.blob();
          this.keepBlob(hash, blob);
          return blob;
        } catch {
          this.fail(hash, 0);
          return undefined;
        } finally {
          this.fetching.delete(hash);
        }
      })();
      this.fetching.set(hash, p);
    }
    return p;
  }

  private async load(hash: string) {
    const started = performance.now();
    this.active++;
    this.inflight.add(hash);
    try {
      const blob = await this.blob(hash);
      // Passed by while it downloaded: keep the bytes, skip the decode.
      if (!blob || this.closed || !this.wantedSet.has(hash)) return;
      const w = this.decodeWidth;
      const full = w
        ? await createImageBitmap(blob, { resizeWidth: w, resizeHeight: Math.max(1, Math.round(w * this.aspect)), resizeQuality: "medium" })
        : await createImageBitmap(blob);
      if (this.closed) return full.close();
      this.bitmaps.set(hash, full);
      if (this.thumbWanted.has(hash)) void this.makeThumb(hash, full);
      this.latencyMs = this.latencyMs * 0.8 + (performance.now() - started) * 0.2;
      this.evict();
      for (const fn of this.listeners) fn(hash);
    } catch {
      this.fail(hash, 0);
    } finally {
      this.active--;
      this.inflight.delete(hash);
      if (!this.closed) this.pump();
    }
  }

  private fail(hash: string, status: number) {
    this.failed.set(hash, status);
    if (status !== 404) setTimeout(() => this.failed.delete(hash), 3000);
    for (const fn of this.listeners) fn(hash);
  }

  private keepBlob(hash: string, blob: Blob) {
    this.blobs.set(hash, blob);
    this.blobBytes += blob.size;
    for (const [k, v] of this.blobs) {
      if (this.blobBytes <= this.maxBlobBytes) break;
      this.blobs.delete(k);
      this.blobBytes -= v.size;
    }
  }

  /** Least recently used first, sparing what is wanted now while anything else can go. */
  private evict() {
    if (this.bitmaps.size <= this.maxBitmaps) return;
    for (const [k, v] of this.bitmaps) {
      if (this.bitmaps.size <= this.maxBitmaps) return;
      if (this.wantedSet.has(k)) continue;
      this.bitmaps.delete(k);
      v.close();
    }
    while (this.bitmaps.size > this.maxBitmaps) {
      const [k, v] = this.bitmaps.entries().next().value as [string, ImageBitmap];
      this.bitmaps.delete(k);
      v.close();
    }
  }
}

/** A cache per page (browser only: undefined while rendering on the server). */
export function useFrameCache(urlOf: (hash: string) => string): FrameCache | undefined {
  const [cache, setCache] = useState<FrameCache>();
  const urlRef = useRef(urlOf);
  urlRef.current = urlOf;
  useEffect(() => {
    const c = new FrameCache((h) => urlRef.current(h));
    setCache(c);
    return () => c.close();
  }, []);
  return cache;
}
