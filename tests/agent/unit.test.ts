// Pure parts of the agent, tested from source: paths, key names, globs, text units, PNG.
import { describe, expect, it } from "vitest";
import { planPath, prng } from "../../images/x11/agent/motion";
import { keysymFor, parseChord } from "../../images/x11/agent/keysyms";
import { globToRegExp } from "../../images/x11/agent/files";
import { textUnits } from "../../images/x11/agent/keyboard";
import { wtypeRuns } from "../../images/x11/agent/wayland-wtype";
import { surrogateUnits } from "../../images/x11/agent/wayland";
import { encodePng } from "../../images/x11/agent/png";
import { toRgb } from "../../images/x11/agent/frames";
import { BandedPng, BAND_ROWS, adler32, adler32Combine } from "../../images/x11/agent/png-bands";
import zlib from "node:zlib";
import type net from "node:net";
import { RfbFrames } from "../../images/x11/agent/wayland-rfb-frames";
import { Yuv420Planes, yuv420Size } from "../../images/x11/agent/yuv420";
import { ByteReader } from "../../app/protocol/rfb/handshake";
import { decodePng } from "./harness";
import { PressWatch } from "../../images/x11/agent/press-watch";

describe("planPath", () => {
  const from = { x: 10, y: 700 };
  const to = { x: 1000, y: 50 };
  it("is the same for the same seed, different for another, and ends on the target", () => {
    const a = planPath(from, to, "human", 1234, 1280, 800);
    expect(planPath(from, to, "human", 1234, 1280, 800)).toEqual(a);
    expect(planPath(from, to, "human", 1235, 1280, 800)).not.toEqual(a);
    expect(a.points[a.points.length - 1]).toEqual(to);
    expect(a.points.length).toBe(a.delays.length);
    expect(a.delays.every((d) => d >= 0 && d <= 12)).toBe(true);
  });
  it("stays on the screen even when the bend would leave it", () => {
    for (let seed = 0; seed < 200; seed++) {
      const p = planPath({ x: 0, y: 0 }, { x: 1279, y: 0 }, "human", seed, 1280, 800);
      for (const q of p.points) {
        expect(q.x).toBeGreaterThanOrEqual(0);
        expect(q.y).toBeGreaterThanOrEqual(0);
        expect(q.x).toBeLessThan(1280);
        expect(q.y).toBeLessThan(800);
      }
    }
  });
  it("instant is one point; smooth a few ms apart on the line", () => {
    expect(planPath(from, to, "instant", 0, 1280, 800)).toEqual({ points: [to], delays: [0] });
    const s = planPath(from, to, "smooth", 0, 1280, 800);
    expect(s.points.length).toBeGreaterThanOrEqual(4);
    expect(s.delays.slice(0, -1).every((d) => d === 4)).toBe(true);
  });
  it("prng is deterministic and in [0, 1)", () => {
    const a = prng(9);
    const b = prng(9);
    for (let i = 0; i < 1000; i++) {
      const v = a();
      expect(v).toBe(b());
      expect(v).toBeGreaterThanOrEqual(0);
      expect(v).toBeLessThan(1);
    }
  });
});

describe("PressWatch: a pointer frozen by a window manager's grab on a press", () => {
  const B1 = 1 << 8;
  it("after a press and a move elsewhere: frozen while the pointer still shows the press's place", () => {
    const w = new PressWatch();
    w.moved(10, 10);
    w.button(1, true);
    w.moved(14, 14);
    expect(w.check({ x: 10, y: 10, mask: B1 })).toBe(false); // frozen: the move waits in the server's queue
    expect(w.pending).toBe(true);
    expect(w.check({ x: 14, y: 14, mask: B1 })).toBe(true);
    expect(w.pending).toBe(false);
  });
  it("after a click: frozen while the button still shows down", () => {
    const w = new PressWatch();
    w.moved(5, 5);
    w.button(1, true);
    w.button(1, false);
    expect(w.check({ x: 5, y: 5, mask: B1 })).toBe(false);
    expect(w.check({ x: 5, y: 5, mask: 0 })).toBe(true);
    expect(w.pending).toBe(false);
  });
  it("a press alone shows nothing to tell by: passes, and the watch stays for the next step", () => {
    const w = new PressWatch();
    w.button(1, true);
    expect(w.check({ x: 1, y: 1, mask: B1 })).toBe(true);
    expect(w.pending).toBe(true);
  });
  it("a pointer an application moved on its own (pointer lock) still passes; wheel ticks are not watched", () => {
    const w = new PressWatch();
    w.moved(10, 10);
    w.button(1, true);
    w.moved(30, 30);
    expect(w.check({ x: 400, y: 300, mask: B1 })).toBe(true);
    w.button(4, true);
    w.button(4, false);
    expect(w.pending).toBe(false);
    expect(w.check({ x: 400, y: 300, mask: B1 })).toBe(true); // button 1 still held, as sent
  });
});

describe("keys", () => {
  it("parses chords, aliases and odd names", () => {
    expect(parseChord("ctrl+shift+t")).toMatchObject({ modifiers: [0xffe3, 0xffe1], key: 0x74 });
    expect(parseChord("Control+L")).toMatchObject({ modifiers: [0xffe3], key: 0x6c });
    expect(parseChord("ctrl++")).toMatchObject({ modifiers: [0xffe3], key: 0x2b });
    expect(parseChord("super")).toMatchObject({ modifiers: [0xffeb], key: null });
    expect(parseChord("alt+F4").key).toBe(0xffc1);
    expect(keysymFor("Enter")).toBe(0xff0d);
    expect(keysymFor("pagedown")).toBe(0xff56);
    expect(keysymFor("0xff0d")).toBe(0xff0d);
    expect(keysymFor("U+20AC")).toBe(0x10020ac);
    expect(keysymFor("é")).toBe(0xe9);
    expect(() => parseChord("a+b")).toThrow(/not a modifier/);
    expect(() => keysymFor("nosuchkey")).toThrow(/unknown key name/);
  });
  it("turns text into keysyms: CRLF is one Return, tab is Tab, emoji is a Unicode keysym", () => {
    expect(textUnits("a\r\nb\tc😀").map((u) => u.sym)).toEqual([0x61, 0xff0d, 0x62, 0xff09, 0x63, 0x0101f600]);
    expect(() => textUnits("\u0007")).toThrow(/control character/);
  });
});

describe("glob", () => {
  it("matches like a shell glob with ** and braces", () => {
    const re = globToRegExp("src/**/*.{ts,tsx}");
    expect(re.test("src/a.ts")).toBe(true);
    expect(re.test("src/x/y/b.tsx")).toBe(true);
    expect(re.test("src/a.js")).toBe(false);
    expect(re.test("lib/a.ts")).toBe(false);
    expect(globToRegExp("*.conf").test("a/b.conf")).toBe(false);
    expect(globToRegExp("file[0-9].txt").test("file7.txt")).toBe(true);
    expect(globToRegExp("a.b").test("axb")).toBe(false);
  });
});

describe("png", () => {
  it("round-trips through an independent decoder, and scaling averages", async () => {
    const w = 7;
    const h = 5;
    const bgrx = Buffer.alloc(w * h * 4);
    for (let i = 0; i < w * h; i++) bgrx.writeUInt32LE(((i * 37) & 0xff) | (((i * 91) & 0xff) << 8) | (((i * 13) & 0xff) << 16), i * 4);
    const png = await encodePng(toRgb(bgrx, w, h, w, h), w, h);
    const img = decodePng(png);
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const v = bgrx.readUInt32LE((y * w + x) * 4);
        expect(img.rgb(x, y)).toEqual([(v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff]);
      }
    }
    const two = Buffer.alloc(2 * 1 * 4);
    two.writeUInt32LE(0x000000, 0);
    two.writeUInt32LE(0xc8c8c8, 4);
    expect([...toRgb(two, 2, 1, 1, 1)]).toEqual([100, 100, 100]);
  });

  // The BGRX path (frames, png-bands.ts) converts four pixels at a time in 32-bit words: every
  // width's remainder (0–3 pixels after the last group of four) and pixels that do not start on a
  // 4-byte boundary.
  it("encodes BGRX pixels exactly, whatever the width, from aligned and unaligned buffers", async () => {
    for (const w of [1, 2, 3, 4, 5, 6, 7, 8, 13, 1280]) {
      const h = 3;
      for (const offset of [0, 1, 2]) {
        const bgrx = Buffer.alloc(w * h * 4 + offset).subarray(offset);
        for (let i = 0; i < w * h; i++) bgrx.writeUInt32LE((((i * 37) & 0xff) | (((i * 91 + 7) & 0xff) << 8) | (((i * 13 + 200) & 0xff) << 16) | (0xaa << 24)) >>> 0, i * 4);
        const img = decodePng(await new BandedPng().encode(bgrx, w, h));
        for (let y = 0; y < h; y++) {
          for (let x = 0; x < w; x++) {
            const v = bgrx.readUInt32LE((y * w + x) * 4);
            expect(img.rgb(x, y), `w ${w} offset ${offset} at ${x},${y}`).toEqual([(v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff]);
          }
        }
      }
    }
  });
});

describe("wtype runs on Wayland", () => {
  /** The evdev code each typed keysym gets in its run: wtype 0.4 puts the n-th distinct one on n (from 1). */
  function codesOf(args: string[]): Map<string, number> {
    const codes = new Map<string, number>();
    for (let i = 0; i < args.length; i += 2) {
      if (args[i] === "-d") continue;
      if (!codes.has(args[i + 1])) codes.set(args[i + 1], codes.size + 1);
    }
    return codes;
  }

  it("puts characters only on typing keys' codes, never on Escape, Backspace, Tab, Enter, Ctrl or Shift", () => {
    const text = Array.from({ length: 200 }, (_, i) => String.fromCodePoint(0x4e00 + i)).join("");
    const runs = wtypeRuns(textUnits(text), 0);
    expect(runs.length).toBe(Math.ceil(200 / 47));
    const typed: string[] = [];
    for (const args of runs) {
      for (const [sym, code] of codesOf(args)) {
        if (/^F2\d$/.test(sym)) expect([1, 14, 15, 28, 29, 42]).toContain(code);
        else expect(code >= 2 && code <= 53 && ![14, 15, 28, 29, 42].includes(code), `${sym} on ${code}`).toBe(true);
      }
      // Fillers are only released; characters only as -k (press and release).
      for (let i = 0; i < args.length; i += 2) if (args[i] === "-k") typed.push(String.fromCodePoint(parseInt(args[i + 1], 16) - 0x01000000));
    }
    expect(typed.join("")).toBe(text);
  });

  it("types a repeated character on its one code, and newlines as Return", () => {
    const runs = wtypeRuns(textUnits("ééé\r\nx"), 25);
    expect(runs).toEqual([["-d", "25", "-p", "F20", "-k", "0xe9", "-k", "0xe9", "-k", "0xe9", "-k", "0xff0d", "-k", "0x78"]]);
  });

  it("types a character beyond U+FFFF as its two UTF-16 units when asked (Chromium on Wayland)", () => {
    const units = textUnits("a😀é").flatMap(surrogateUnits);
    expect(units.map((u) => u.sym.toString(16))).toEqual(["61", "100d83d", "100de00", "e9"]);
    expect(units.map((u) => u.ch).join("")).toBe("a😀é");
    expect(wtypeRuns(units, 0)).toEqual([["-p", "F20", "-k", "0x61", "-k", "0x100d83d", "-k", "0x100de00", "-k", "0xe9"]]);
  });

  describe("banded", () => {
    const w = 1283; // not a multiple of four: the scanline remainder too
    const h = BAND_ROWS * 3 + 5; // a short last band
    const pixels = (seed: number) => {
      const px = Buffer.alloc(w * h * 4);
      const next = prng(seed);
      for (let i = 0; i < w * h; i++) px.writeUInt32LE(Math.floor(next() * 0x1000000), i * 4);
      return px;
    };
    const expectPixels = (png: Buffer, px: Buffer) => {
      const img = decodePng(png); // inflateSync checks the Adler-32
      expect([img.width, img.height]).toEqual([w, h]);
      for (let y = 0; y < h; y += 7) {
        for (let x = 0; x < w; x += 5) {
          const v = px.readUInt32LE((y * w + x) * 4);
          expect(img.rgb(x, y), `at ${x},${y}`).toEqual([(v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff]);
        }
      }
      // Every chunk's CRC, by Node's own zlib.
      for (let off = 8; off < png.length; ) {
        const len = png.readUInt32BE(off);
        expect(png.readUInt32BE(off + 8 + len)).toBe(zlib.crc32(png.subarray(off + 4, off + 8 + len)));
        off += 12 + len;
      }
    };

    it("combines Adler-32s as zlib does", () => {
      const data = pixels(3);
      const z = zlib.deflateSync(data, { level: 1 }); // a zlib stream ends with the Adler-32 of its data
      expect(adler32(data)).toBe(z.readUInt32BE(z.length - 4));
      for (const at of [1, 2, 3]) {
        const z1 = zlib.deflateSync(data.subarray(at, at + 10_001), { level: 1 }); // unaligned, a ragged end
        expect(adler32(data.subarray(at, at + 10_001)), `offset ${at}`).toBe(z1.readUInt32BE(z1.length - 4));
      }
      for (const cut of [0, 1, 5551, 5552, 65521, 65522, 200_000, data.length]) {
        expect(adler32Combine(adler32(data.subarray(0, cut)), adler32(data.subarray(cut)), data.length - cut), `cut ${cut}`).toBe(adler32(data));
      }
    });

    it("deflates only the bands that changed, and gives the same bytes as a fresh encode", async () => {
      const enc = new BandedPng();
      const a = pixels(1);
      expectPixels(await enc.encode(a, w, h), a);
      expect(enc.lastDeflated).toBe(4);
      const b = Buffer.from(a);
      b.writeUInt32LE(0x123456, (BAND_ROWS * 2 + 3) * w * 4 + 17 * 4); // one pixel in the third band
      const pngB = await enc.encode(b, w, h);
      expect(enc.lastDeflated).toBe(1);
      expectPixels(pngB, b);
      expect(pngB.equals(await new BandedPng().encode(b, w, h))).toBe(true);
      await enc.encode(Buffer.from(b), w, h);
      expect(enc.lastDeflated).toBe(0);
      // Another size starts over.
      const c = pixels(2).subarray(0, w * (h - 1) * 4);
      await enc.encode(c, w, h - 1);
      expect(enc.lastDeflated).toBe(4);
    });
  });
});

describe("Wayland frames from wayvnc (RfbFrames)", () => {
  // wayvnc scripted: what the agent asks for is recorded, and updates are pushed as wayvnc sends them.
  // Tall enough that a whole-screen update's rows come in more than one read (ROWS_AT_ONCE).
  const W = 40;
  const H = 600;
  const session = (followFps?: number, yuv = false) => {
    const asked: Buffer[] = [];
    const sock = { write: (b: Buffer) => (asked.push(Buffer.from(b)), true), destroy: () => undefined, destroyed: false } as unknown as net.Socket;
    const reader = new ByteReader();
    const frames = new RfbFrames(sock, reader, W, H, followFps, yuv);
    return { frames, reader, asked: () => asked.filter((b) => b[0] === 3) };
  };
  /** A rect's pixel at (x, y) of the screen: `v` plus where it is, so a row put in the wrong place shows. */
  const pixel = (v: number, x: number, y: number) => (v + y * W + x) >>> 0;
  /** A FramebufferUpdate of Raw rects (pixels from `pixel`). */
  const update = (rects: { x: number; y: number; w: number; h: number; v: number }[]) => {
    const parts = [Buffer.from([0, 0, rects.length >> 8, rects.length & 0xff])];
    for (const r of rects) {
      const head = Buffer.alloc(12);
      head.writeUInt16BE(r.x, 0);
      head.writeUInt16BE(r.y, 2);
      head.writeUInt16BE(r.w, 4);
      head.writeUInt16BE(r.h, 6);
      const px = Buffer.alloc(r.w * r.h * 4);
      for (let i = 0; i < r.w * r.h; i++) px.writeUInt32LE(pixel(r.v, r.x + (i % r.w), r.y + Math.floor(i / r.w)), i * 4);
      parts.push(head, px);
    }
    return Buffer.concat(parts);
  };
  const paint = (model: Buffer, r: { x: number; y: number; w: number; h: number; v: number }) => {
    for (let y = r.y; y < r.y + r.h; y++) for (let x = r.x; x < r.x + r.w; x++) model.writeUInt32LE(pixel(r.v, x, y), (y * W + x) * 4);
  };
  /** As the socket gives it: in pieces that split rows and headers. */
  const push = (reader: ByteReader, bytes: Buffer) => {
    for (let at = 0; at < bytes.length; at += 999) reader.push(bytes.subarray(at, at + 999));
  };

  it("asks for the whole screen once, then one pixel, and takes the changes wayvnc joins to it", async () => {
    const { frames, reader, asked } = session();
    const first = frames.capture(1000);
    expect([...asked()[0]!]).toEqual([3, 0, 0, 0, 0, 0, W >> 8, W & 255, H >> 8, H & 255]);
    const model = Buffer.alloc(W * H * 4);
    const all = { x: 0, y: 0, w: W, h: H, v: 0x203040 };
    paint(model, all);
    push(reader, update([all]));
    expect((await first).equals(model)).toBe(true);
    const a = await first;
    const next = frames.capture(1000);
    expect([...asked()[1]!]).toEqual([3, 0, 0, 0, 0, 0, 0, 1, 0, 1]);
    const change = { x: 10, y: 7, w: 5, h: 3, v: 0xff0000 };
    paint(model, change);
    push(reader, update([{ x: 0, y: 0, w: 1, h: 1, v: 0x203040 }, change]));
    const b = await next;
    expect(b.equals(model)).toBe(true);
    expect(a.equals(b)).toBe(false); // the first frame was a copy, not the buffer that changed
    // Nothing changed: wayvnc sends the one pixel, and the frame is the same Buffer.
    const still = frames.capture(1000);
    reader.push(update([{ x: 0, y: 0, w: 1, h: 1, v: 0x203040 }]));
    expect(await still).toBe(b);
  });

  it("a recording's session gives YUV 4:2:0 planes of the screen, up to date after each update", async () => {
    const { frames, reader } = session(10, true);
    const model = Buffer.alloc(W * H * 4);
    const all = { x: 0, y: 0, w: W, h: H, v: 0x102030 };
    paint(model, all);
    push(reader, update([all]));
    const planes = new Yuv420Planes(W, H);
    planes.update(model, 0, 0, W, H);
    const first = await frames.latest(1000);
    expect(first.length).toBe(yuv420Size(W, H));
    expect(first.equals(planes.buf)).toBe(true);
    // An odd rect: the 2×2 blocks it touches take its pixels and their neighbours' as they are.
    const change = { x: 5, y: 301, w: 7, h: 3, v: 0xff00ff };
    paint(model, change);
    push(reader, update([change]));
    await new Promise((r) => setImmediate(r));
    const fresh = new Yuv420Planes(W, H);
    fresh.update(model, 0, 0, W, H);
    const next = await frames.latest(1000);
    expect(next.equals(fresh.buf)).toBe(true);
    expect(next.equals(first)).toBe(false);
    frames.close();
  });
});

describe("YUV 4:2:0 planes (Yuv420Planes)", () => {
  const bgrx = (w: number, h: number, at: (x: number, y: number) => [number, number, number]) => {
    const b = Buffer.alloc(w * h * 4);
    for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) b.set([...at(x, y)].reverse().concat(0), (y * w + x) * 4);
    return b;
  };
  it("is BT.601 limited range: white, black, red, green, blue as ffmpeg gives them", () => {
    const cases: [[number, number, number], [number, number, number]][] = [
      [[255, 255, 255], [235, 128, 128]],
      [[0, 0, 0], [16, 128, 128]],
      [[255, 0, 0], [81, 90, 240]],
      [[0, 255, 0], [145, 54, 34]],
      [[0, 0, 255], [41, 240, 110]],
    ];
    for (const [rgb, yuv] of cases) {
      const p = new Yuv420Planes(2, 2);
      p.update(bgrx(2, 2, () => rgb), 0, 0, 2, 2);
      expect([p.buf[0], p.buf[4], p.buf[5]], `rgb ${rgb}`).toEqual(yuv);
      expect([p.buf[1], p.buf[2], p.buf[3]]).toEqual([yuv[0], yuv[0], yuv[0]]);
    }
  });
  it("takes each chroma sample from its 2×2 pixels, and a changed area leaves the rest as it was", () => {
    const W = 64;
    const H = 48;
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 16) & 255;
    const px = bgrx(W, H, () => [rnd(), rnd(), rnd()]);
    const p = new Yuv420Planes(W, H);
    p.update(px, 0, 0, W, H);
    // One block by hand: the mean of four pixels.
    const sum = (k: number) => [0, 1, W, W + 1].reduce((s, i) => s + px[i * 4 + k]!, 0);
    const [b, g, r] = [sum(0), sum(1), sum(2)];
    expect(p.buf[W * H]).toBe(Math.round(128 + (-0.148223 * r - 0.290993 * g + 0.439216 * b) / 4));
    expect(p.buf[W * H + (W / 2) * (H / 2)]).toBe(Math.round(128 + (0.439216 * r - 0.367788 * g - 0.071427 * b) / 4));
    // Odd areas changed and converted alone end where a whole conversion of the new screen does.
    for (const [x, y, w, h] of [[3, 5, 9, 1], [0, 0, 1, 1], [W - 1, H - 1, 1, 1], [10, 11, 30, 20]] as const) {
      for (let yy = y; yy < y + h; yy++) for (let xx = x; xx < x + w; xx++) px.set([rnd(), rnd(), rnd()], (yy * W + xx) * 4);
      p.update(px, x, y, w, h);
      const whole = new Yuv420Planes(W, H);
      whole.update(px, 0, 0, W, H);
      expect(p.buf.equals(whole.buf), `after ${[x, y, w, h]}`).toBe(true);
    }
    expect(() => new Yuv420Planes(3, 2)).toThrow(/even/);
  });
});
