// A screen kept as planar YUV 4:2:0 (what x264 encodes), converted from BGRX rows only where an
// update changed them. A Wayland recording feeds ffmpeg these planes instead of 4 MB of BGRX a
// frame: 1.5 MB through its stdin instead of 4, and no colour conversion in ffmpeg, which was
// its largest part (2.7 ms a frame at 1280×800) though most of a desktop's frame is as it was.
// The conversion is ffmpeg's default for this: ITU-R BT.601, limited range (Y 16–235, U and V
// 16–240), each chroma sample the mean of its 2×2 pixels.

// BT.601's coefficients for 8-bit limited range (219/255 of Y, 224/255 of U and V), × 2^16. A
// chroma sample is from the sum of four pixels, so it is shifted by two bits more.
const YR = 16829, YG = 33039, YB = 6416;
const UR = -9714, UG = -19070, UB = 28784;
const VR = 28784, VG = -24103, VB = -4681;
const HALF16 = 1 << 15;
const HALF18 = 1 << 17;

/** Bytes of a YUV 4:2:0 picture of this size (both sides even). */
export function yuv420Size(width: number, height: number): number {
  return width * height + 2 * (width / 2) * (height / 2);
}

export class Yuv420Planes {
  /** Y plane, then U, then V: ffmpeg's `yuv420p`. */
  readonly buf: Buffer;
  private readonly uAt: number;
  private readonly vAt: number;

  constructor(
    readonly width: number,
    readonly height: number,
  ) {
    if (width % 2 || height % 2) throw new Error(`YUV 4:2:0 needs even sides, not ${width}×${height}`);
    this.buf = Buffer.alloc(yuv420Size(width, height));
    this.uAt = width * height;
    this.vAt = this.uAt + (width / 2) * (height / 2);
  }

  /**
   * Converts the area (x, y, w, h) of `bgrx` (this screen's size, 4 bytes a pixel, blue first),
   * widened to whole 2×2 blocks.
   */
  update(bgrx: Buffer, x: number, y: number, w: number, h: number): void {
    const W = this.width;
    const x0 = Math.max(0, x & ~1);
    const y0 = Math.max(0, y & ~1);
    const x1 = Math.min(W, (x + w + 1) & ~1);
    const y1 = Math.min(this.height, (y + h + 1) & ~1);
    // A pixel a read, as a little-endian 32-bit word: blue in the low byte, red in the third. The
    // frame buffer is the agent's own (Buffer.alloc, aligned); a copy to align one would be 4 MB.
    if (bgrx.byteOffset % 4 !== 0) throw new Error("the BGRX buffer must start on a 4-byte boundary");
    const px = new Uint32Array(bgrx.buffer, bgrx.byteOffset, bgrx.length >> 2);
    const out = this.buf;
    const half = W / 2;
    const uAt = this.uAt;
    const vAt = this.vAt;
    for (let row = y0; row < y1; row += 2) {
      let a = row * W + x0; // this row's pixel (and its Y sample)
      let b = a + W; // the one below it
      let c = (row / 2) * half + x0 / 2;
      for (let col = x0; col < x1; col += 2) {
        const p0 = px[a]!, p1 = px[a + 1]!, p2 = px[b]!, p3 = px[b + 1]!;
        const b0 = p0 & 255, g0 = (p0 >> 8) & 255, r0 = (p0 >> 16) & 255;
        const b1 = p1 & 255, g1 = (p1 >> 8) & 255, r1 = (p1 >> 16) & 255;
        const b2 = p2 & 255, g2 = (p2 >> 8) & 255, r2 = (p2 >> 16) & 255;
        const b3 = p3 & 255, g3 = (p3 >> 8) & 255, r3 = (p3 >> 16) & 255;
        out[a] = ((YR * r0 + YG * g0 + YB * b0 + HALF16) >> 16) + 16;
        out[a + 1] = ((YR * r1 + YG * g1 + YB * b1 + HALF16) >> 16) + 16;
        out[b] = ((YR * r2 + YG * g2 + YB * b2 + HALF16) >> 16) + 16;
        out[b + 1] = ((YR * r3 + YG * g3 + YB * b3 + HALF16) >> 16) + 16;
        const r = r0 + r1 + r2 + r3;
        const g = g0 + g1 + g2 + g3;
        const bl = b0 + b1 + b2 + b3;
        out[uAt + c] = ((UR * r + UG * g + UB * bl + HALF18) >> 18) + 128;
        out[vAt + c] = ((VR * r + VG * g + VB * bl + HALF18) >> 18) + 128;
        a += 2;
        b += 2;
        c++;
      }
    }
  }
}
