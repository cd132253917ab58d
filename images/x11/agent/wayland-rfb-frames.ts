// Frames of a Wayland screen from wayvnc, over the agent's own RFB session (the one its input goes
// through): a non-incremental FramebufferUpdateRequest (of the whole screen once, then of one
// pixel, which wayvnc answers with all that changed since: `capture`), answered in Raw encoding
// as 32-bit BGRX rows, the layout the X11 path captures in, so hashing, `have` and the PNG
// encoder are shared. grim (one process and a 3 MB pipe per capture) cost 2.3× X11's frame in
// `npm run bench wayland`; wayvnc already holds the screen (ADR 0030). A recording has a session
// of its own that follows the screen with incremental updates (`followFps`).
import type net from "node:net";
import type { ByteReader } from "../../../app/protocol/rfb/handshake";
import { Yuv420Planes } from "./yuv420";

/** SetPixelFormat: 32 bpp, depth 24, little-endian, true colour, red at 16, green 8, blue 0 (BGRX in memory). */
function pixelFormatMessage(): Buffer {
  const b = Buffer.alloc(20);
  b[0] = 0;
  b[4] = 32; // bits per pixel
  b[5] = 24; // depth
  b[6] = 0; // little-endian
  b[7] = 1; // true colour
  b.writeUInt16BE(255, 8);
  b.writeUInt16BE(255, 10);
  b.writeUInt16BE(255, 12);
  b[14] = 16;
  b[15] = 8;
  b[16] = 0;
  return b;
}

/** SetEncodings: Raw only. */
function encodingsMessage(): Buffer {
  const b = Buffer.alloc(8);
  b[0] = 2;
  b.writeUInt16BE(1, 2);
  b.writeInt32BE(0, 4);
  return b;
}

/** FramebufferUpdateRequest: the whole screen, or `area` of it (non-incremental only). */
function updateRequest(incremental: boolean, width: number, height: number, area?: { x: number; y: number; width: number; height: number }): Buffer {
  const b = Buffer.alloc(10);
  b[0] = 3;
  b[1] = incremental ? 1 : 0;
  b.writeUInt16BE(area?.x ?? 0, 2);
  b.writeUInt16BE(area?.y ?? 0, 4);
  b.writeUInt16BE(area?.width ?? width, 6);
  b.writeUInt16BE(area?.height ?? height, 8);
  return b;
}

/** Bytes of an update's rows read at once (whole rows; one row at least). */
const ROWS_AT_ONCE = 64 * 1024;

export class RfbFrames {
  private readonly fb: Buffer;
  private waiters: { resolve: (px: Buffer) => void; reject: (e: Error) => void }[] = [];
  private failed: Error | null = null;
  /** Updates applied so far; the snapshot `latest()` last made, and of which update. */
  private version = 0;
  private snapshot: { version: number; px: Buffer } | null = null;
  private followTimer: NodeJS.Timeout | null = null;
  private lastAsked = 0;
  /** With `yuv`: the screen as YUV 4:2:0 too, kept up to date rect by rect; frames are these. */
  private readonly yuv: Yuv420Planes | null;

  /**
   * `followFps`: keep the frame buffer current by itself, with incremental requests at most that
   * often (a recording's session): wayvnc then sends only what changed, and nothing at all for
   * a still screen, instead of 4 MB per frame asked for. `yuv`: frames are YUV 4:2:0 planes
   * (yuv420.ts), converted where the updates changed the screen, not BGRX rows.
   */
  constructor(
    private readonly sock: net.Socket,
    private readonly reader: ByteReader,
    readonly width: number,
    readonly height: number,
    private readonly followFps?: number,
    yuv = false,
  ) {
    this.fb = Buffer.alloc(width * height * 4);
    this.yuv = yuv ? new Yuv420Planes(width, height) : null;
    sock.write(Buffer.concat([pixelFormatMessage(), encodingsMessage()]));
    void this.loop().catch((err: unknown) => this.fail(err instanceof Error ? err : new Error(String(err))));
    if (followFps) this.ask(false);
  }

  private ask(incremental: boolean, area?: { x: number; y: number; width: number; height: number }): void {
    this.lastAsked = Date.now();
    this.sock.write(updateRequest(incremental, this.width, this.height, area));
  }

  /** After an update, in follow mode: the next incremental request, no sooner than 1/fps after the last. */
  private followOn(): void {
    if (!this.followFps || this.followTimer || this.failed) return;
    const wait = Math.max(0, this.lastAsked + 1000 / this.followFps - Date.now());
    this.followTimer = setTimeout(() => {
      this.followTimer = null;
      if (!this.failed && !this.sock.destroyed) this.ask(true);
    }, wait);
  }

  private fail(err: Error): void {
    this.failed = err;
    if (this.followTimer) clearTimeout(this.followTimer);
    for (const w of this.waiters.splice(0)) w.reject(err);
    this.sock.destroy();
  }

  /** Ends the session (a recording's, when it stops). */
  close(): void {
    this.fail(new Error("the frame session was closed"));
  }

  /**
   * Follow mode: the screen as of the last update (a copy made once per update, so a still screen
   * gives the same Buffer again); waits for the first one. The copy goes into `into` when given
   * (a buffer of the screen's size that nothing reads any more): a fresh 4 MB buffer ten times a
   * second cost the agent more than the copy itself (its pages faulted in and freed each time).
   */
  latest(timeoutMs = 5000, into?: Buffer): Promise<Buffer> {
    if (this.version === 0) return this.capture(timeoutMs, false);
    return Promise.resolve(this.snap(into));
  }

  /** The frame buffer as of now, copied once per change: the same Buffer while nothing changed. */
  private snap(into?: Buffer): Buffer {
    if (this.snapshot?.version !== this.version) {
      const from = this.yuv?.buf ?? this.fb;
      const reuse = into && into.length === from.length && into !== this.snapshot?.px;
      const px = reuse ? into : Buffer.allocUnsafe(from.length);
      from.copy(px);
      this.snapshot = { version: this.version, px };
    }
    return this.snapshot.px;
  }

  /** Reads what wayvnc sends, for good: updates into the frame buffer, the rest skipped. */
  private async loop(): Promise<void> {
    const r = this.reader;
    for (;;) {
      const type = (await r.read(1))[0];
      if (type === 0) {
        let changed = this.version === 0;
        const n = (await r.read(3)).readUInt16BE(1);
        for (let i = 0; i < n; i++) {
          const h = await r.read(12);
          const x = h.readUInt16BE(0);
          const y = h.readUInt16BE(2);
          const w = h.readUInt16BE(4);
          const hh = h.readUInt16BE(6);
          const enc = h.readInt32BE(8);
          if (enc !== 0) throw new Error(`wayvnc sent encoding ${enc}, not Raw`);
          // Straight into the frame buffer, up to ROWS_AT_ONCE bytes of rows at a time (no 4 MB
          // gathered first, and not one read per row: a read and its Buffers per row were a
          // third of the agent's time while it fed a recording), noting whether any row differs:
          // a catch-up update of a still screen changes nothing.
          const cols = Math.max(0, Math.min(w, this.width - x));
          const stride = w * 4;
          const perRead = Math.max(1, Math.floor(ROWS_AT_ONCE / Math.max(1, stride)));
          for (let row = 0; row < hh; ) {
            const rows = Math.min(perRead, hh - row);
            const block = await r.read(rows * stride);
            for (let k = 0; k < rows; k++, row++) {
              if (y + row >= this.height || cols === 0) continue;
              const at = ((y + row) * this.width + x) * 4;
              const from = k * stride;
              if (!changed && block.compare(this.fb, at, at + cols * 4, from, from + cols * 4) !== 0) changed = true;
              block.copy(this.fb, at, from, from + cols * 4);
            }
          }
          if (this.yuv && cols > 0 && y < this.height) this.yuv.update(this.fb, x, y, cols, Math.min(hh, this.height - y));
        }
        if (changed) this.version++;
        if (this.waiters.length > 0) {
          const px = this.snap();
          for (const w of this.waiters.splice(0)) w.resolve(px);
        }
        this.followOn();
      } else if (type === 1) {
        const h = await r.read(5);
        await r.read(h.readUInt16BE(3) * 6);
      } else if (type === 2) {
        // Bell
      } else if (type === 3) {
        const h = await r.read(7);
        await r.read(h.readUInt32BE(3));
      } else {
        throw new Error(`wayvnc sent message type ${type}, which this agent does not read`);
      }
    }
  }

  /** Whether a frame request is on its way (its answer, not yet come, will answer every waiter). */
  get asking(): boolean {
    return this.waiters.length > 0;
  }

  /**
   * The whole screen now, BGRX rows (a copy, the same Buffer while nothing changed); `ask: false`
   * waits for the next update only. The first request is for the whole screen. After it, the
   * request is a non-incremental one for a single pixel: wayvnc (neatvnc) keeps, for each
   * session, what changed on the screen since that session's last update, and answers a
   * non-incremental request at once with the area asked for joined to all of that. So one
   * request brings this frame buffer up to date with wayvnc's latest capture, as a request for
   * the whole screen would, but sends only what changed, not 4 MB every time.
   */
  capture(timeoutMs = 5000, ask = true): Promise<Buffer> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        reject(new Error(`wayvnc sent no frame within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = (px: Buffer) => {
        clearTimeout(timer);
        resolve(px);
      };
      this.waiters.push({ resolve: done, reject: (e) => (clearTimeout(timer), reject(e)) });
      // One request answers every waiter: the next update brings the whole screen up to date.
      if (ask && this.waiters.length === 1) this.ask(false, this.version === 0 ? undefined : { x: 0, y: 0, width: 1, height: 1 });
    });
  }
}
