// FramebufferUpdateRequests the RFB filter (rfb-filter.ts) holds back from a viewer that cannot
// keep up, merged into one for when it is released.

/** One FramebufferUpdateRequest standing for several: their bounding box, incremental only if all were. */
export class HeldUpdateRequests {
  private incremental = true;
  private x0 = 0;
  private y0 = 0;
  private x1 = 0;
  private y1 = 0;
  count = 0;

  add(msg: Buffer) {
    const inc = msg[1] !== 0;
    const x = msg.readUInt16BE(2);
    const y = msg.readUInt16BE(4);
    const x1 = x + msg.readUInt16BE(6);
    const y1 = y + msg.readUInt16BE(8);
    if (this.count === 0) {
      [this.incremental, this.x0, this.y0, this.x1, this.y1] = [inc, x, y, x1, y1];
    } else {
      this.incremental &&= inc;
      this.x0 = Math.min(this.x0, x);
      this.y0 = Math.min(this.y0, y);
      this.x1 = Math.max(this.x1, x1);
      this.y1 = Math.max(this.y1, y1);
    }
    this.count++;
  }

  /** The merged request, and empties the hold; undefined when nothing is held. */
  take(): Buffer | undefined {
    if (this.count === 0) return undefined;
    const b = Buffer.alloc(10);
    b[0] = 3; // FramebufferUpdateRequest
    b[1] = this.incremental ? 1 : 0;
    b.writeUInt16BE(this.x0, 2);
    b.writeUInt16BE(this.y0, 4);
    b.writeUInt16BE(Math.min(0xffff, this.x1 - this.x0), 6);
    b.writeUInt16BE(Math.min(0xffff, this.y1 - this.y0), 8);
    this.count = 0;
    return b;
  }
}
