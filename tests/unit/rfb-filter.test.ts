import { constants as zlibConstants, deflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { HeldUpdateRequests, MSG, RFB_CLOSE, RfbClientFilter, type RfbInput, type RfbMode } from "../../app/protocol/rfb/filter";

// Client→server RFB messages, built by hand from RFC 6143 and the extension specs.
const b = (...bytes: number[]) => Buffer.from(bytes);
const u16 = (n: number) => [(n >> 8) & 0xff, n & 0xff];
const u32 = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
const s32 = (n: number) => {
  const x = Buffer.alloc(4);
  x.writeInt32BE(n);
  return [...x];
};

const m = {
  version: (minor: number) => Buffer.from(`RFB 003.${String(minor).padStart(3, "0")}\n`, "latin1"),
  setPixelFormat: () => b(0, 0, 0, 0, 32, 24, 0, 1, ...u16(255), ...u16(255), ...u16(255), 16, 8, 0, 0, 0, 0),
  setEncodings: (encs: number[]) => b(2, 0, ...u16(encs.length), ...encs.flatMap((e) => s32(e))),
  fbur: (incremental: number, x: number, y: number, w: number, h: number) =>
    b(3, incremental, ...u16(x), ...u16(y), ...u16(w), ...u16(h)),
  key: (down: boolean, keysym: number) => b(4, down ? 1 : 0, 0, 0, ...u32(keysym)),
  pointer: (mask: number, x: number, y: number) => b(5, mask, ...u16(x), ...u16(y)),
  cut: (text: string | Buffer) => {
    const t = Buffer.isBuffer(text) ? text : Buffer.from(text, "latin1");
    return Buffer.concat([b(6, 0, 0, 0, ...u32(t.length)), t]);
  },
  /** Extended clipboard: the length is negative and its absolute value is the payload size. */
  cutExtended: (payload: Buffer) => Buffer.concat([b(6, 0, 0, 0, ...s32(-payload.length)), payload]),
  ecu: (enable: number) => b(150, enable, ...u16(0), ...u16(0), ...u16(1280), ...u16(800)),
  fence: (payload: Buffer) => Buffer.concat([b(248, 0, 0, 0, ...u32(0x80000001), payload.length), payload]),
  xvp: (code: number) => b(250, 0, 1, code),
  setDesktopSize: (screens: number) =>
    Buffer.concat([
      b(251, 0, ...u16(1024), ...u16(768), screens, 0),
      ...Array.from({ length: screens }, (_, i) => b(...u32(i), ...u16(0), ...u16(0), ...u16(1024), ...u16(768), ...u32(0))),
    ]),
  gii: (payload: Buffer, bigEndian: boolean) => {
    const len = Buffer.alloc(2);
    if (bigEndian) len.writeUInt16BE(payload.length);
    else len.writeUInt16LE(payload.length);
    return Buffer.concat([b(253, bigEndian ? 0x80 : 0x00, ...len), payload]);
  },
  qemuKey: (down: boolean, keysym: number, keycode: number) => b(255, 0, ...u16(down ? 1 : 0), ...u32(keysym), ...u32(keycode)),
  qemuAudio: (op: number) => (op === 2 ? b(255, 1, ...u16(2), 3, 2, ...u32(44100)) : b(255, 1, ...u16(op))),
};

/** Handshake for a version: ProtocolVersion, security None (3.7/3.8), ClientInit shared=0. */
const handshake = (minor: number, shared = 0) =>
  minor >= 7 ? Buffer.concat([m.version(minor), b(1), b(shared)]) : Buffer.concat([m.version(minor), b(shared)]);

function run(mode: RfbMode, chunks: Buffer[]) {
  const inputs: RfbInput[] = [];
  const f = new RfbClientFilter({ mode, onInput: (kind, detail) => inputs.push({ kind, detail } as RfbInput) });
  const outs: Buffer[] = [];
  let close: { code: number; reason: string } | undefined;
  for (const c of chunks) {
    const r = f.push(c);
    outs.push(r.out);
    if (r.close) {
      expect(close, "close reported twice").toBeUndefined();
      close = r.close;
    }
  }
  return { out: Buffer.concat(outs), close, inputs, filter: f };
}

/** A tiny seeded PRNG so a failing split can be replayed. */
function rng(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x100000000;
  };
}

function randomChunks(all: Buffer, seed: number, max = 40): Buffer[] {
  const r = rng(seed);
  const out: Buffer[] = [];
  for (let at = 0; at < all.length; ) {
    const n = Math.min(all.length - at, r() < 0.1 ? 0 : 1 + Math.floor(r() * max));
    out.push(all.subarray(at, at + n));
    at += n;
  }
  return out;
}

const byteByByte = (all: Buffer) => [...all].map((x) => b(x));

// Every message type, with which ones view mode keeps.
const sample: { name: string; bytes: Buffer; view: boolean }[] = [
  { name: "SetPixelFormat", bytes: m.setPixelFormat(), view: true },
  { name: "SetEncodings", bytes: m.setEncodings([7, 16, 0, 1, -223, -239, -258, -308, -312, 0x574d5664]), view: true },
  { name: "FramebufferUpdateRequest", bytes: m.fbur(0, 0, 0, 1280, 800), view: true },
  { name: "KeyEvent down", bytes: m.key(true, 0x61), view: false },
  { name: "KeyEvent up", bytes: m.key(false, 0x61), view: false },
  { name: "PointerEvent press", bytes: m.pointer(1, 100, 200), view: false },
  { name: "PointerEvent release", bytes: m.pointer(0, 100, 200), view: false },
  { name: "ClientCutText", bytes: m.cut("secret text"), view: false },
  { name: "ClientCutText extended", bytes: m.cutExtended(Buffer.from([0x10, 0, 0, 1, 5, 6, 7])), view: false },
  { name: "EnableContinuousUpdates", bytes: m.ecu(1), view: true },
  { name: "ClientFence", bytes: m.fence(Buffer.from("fence-payload")), view: true },
  { name: "ClientFence empty", bytes: m.fence(Buffer.alloc(0)), view: true },
  { name: "xvp reboot", bytes: m.xvp(3), view: false },
  { name: "SetDesktopSize", bytes: m.setDesktopSize(2), view: false },
  { name: "gii big-endian", bytes: m.gii(Buffer.alloc(300, 7), true), view: false },
  { name: "gii little-endian", bytes: m.gii(Buffer.alloc(260, 9), false), view: false },
  { name: "QEMU extended key event", bytes: m.qemuKey(true, 0x62, 48), view: false },
  { name: "QEMU audio enable", bytes: m.qemuAudio(0), view: true },
  { name: "QEMU audio set format", bytes: m.qemuAudio(2), view: true },
  { name: "QEMU audio disable", bytes: m.qemuAudio(1), view: true },
  { name: "FramebufferUpdateRequest incremental", bytes: m.fbur(1, 10, 20, 30, 40), view: true },
];

const stream = (minor = 8) => Buffer.concat([handshake(minor), ...sample.map((s) => s.bytes)]);
const expectedView = (minor = 8) => Buffer.concat([handshake(minor, 1), ...sample.filter((s) => s.view).map((s) => s.bytes)]);
const expectedControl = (minor = 8) => Buffer.concat([handshake(minor, 1), ...sample.map((s) => s.bytes)]);

describe("handshake", () => {
  for (const minor of [3, 7, 8]) {
    it(`RFB 3.${minor}: passes the handshake and forces ClientInit's shared flag`, () => {
      for (const mode of ["view", "control"] as const) {
        const { out, close, filter } = run(mode, [handshake(minor, 0)]);
        expect(close).toBeUndefined();
        expect(out).toEqual(handshake(minor, 1));
        expect(filter.version).toBe(minor);
      }
    });
  }

  it("reads 3.4–3.6 as 3.3 and 3.9+ (UltraVNC 3.14) as 3.8, as libvncserver does", () => {
    expect(run("view", [handshake(5)]).filter.version).toBe(3);
    const ultra = Buffer.concat([m.version(14), b(1), b(0)]);
    const r = run("view", [ultra]);
    expect(r.filter.version).toBe(8);
    expect(r.out.at(-1)).toBe(1);
  });

  it("3.3 has no security choice: the byte after the version is ClientInit", () => {
    const { out } = run("view", [Buffer.concat([m.version(3), b(0), m.fbur(0, 0, 0, 8, 8), m.pointer(1, 1, 1)])]);
    expect(out).toEqual(Buffer.concat([m.version(3), b(1), m.fbur(0, 0, 0, 8, 8)]));
  });

  it("keeps a shared flag that is already 1", () => {
    expect(run("view", [handshake(8, 1)]).out).toEqual(handshake(8, 1));
  });

  it("frames a VNC-authentication response (16 bytes) before ClientInit", () => {
    const response = Buffer.from([0, 5, 0, 4, 0, 3, 0, 6, 1, 2, 3, 4, 5, 6, 7, 0]);
    const all = Buffer.concat([m.version(8), b(2), response, b(0), m.key(true, 0x61), m.fbur(0, 0, 0, 1, 1)]);
    for (const chunks of [[all], byteByByte(all)]) {
      const { out } = run("view", chunks);
      expect(out).toEqual(Buffer.concat([m.version(8), b(2), response, b(1), m.fbur(0, 0, 0, 1, 1)]));
    }
  });

  it("closes on a security type it cannot frame, in both modes", () => {
    for (const mode of ["view", "control"] as const) {
      const { out, close } = run(mode, [Buffer.concat([m.version(8), b(19), b(0)])]);
      expect(close?.code).toBe(RFB_CLOSE.unsupported);
      expect(close?.reason).toMatch(/security type 19/);
      expect(out).toEqual(m.version(8));
    }
  });

  it("closes on bytes that are not RFB", () => {
    const { out, close } = run("control", [Buffer.from("GET / HTTP/1.1\r\n\r\n")]);
    expect(close?.code).toBe(RFB_CLOSE.protocol);
    expect(out.length).toBe(0);
    expect(run("view", [Buffer.from("RFB 004.001\n")]).close?.code).toBe(RFB_CLOSE.unsupported);
  });
});

describe("messages", () => {
  it("control mode passes every message unchanged (but for the shared flag)", () => {
    const { out, close } = run("control", [stream()]);
    expect(close).toBeUndefined();
    expect(out).toEqual(expectedControl());
  });

  it("view mode passes display messages and drops every kind of input", () => {
    const { out, close, filter, inputs } = run("view", [stream()]);
    expect(close).toBeUndefined();
    expect(out).toEqual(expectedView());
    expect(inputs).toEqual([]);
    expect(Object.fromEntries(filter.dropped)).toEqual({
      [MSG.KeyEvent]: 2,
      [MSG.PointerEvent]: 2,
      [MSG.ClientCutText]: 2,
      [MSG.Xvp]: 1,
      [MSG.SetDesktopSize]: 1,
      [MSG.Gii]: 2,
      [MSG.Qemu]: 1,
    });
  });

  for (const s of sample) {
    it(`${s.name}: ${s.view ? "passes" : "dropped"} in view mode, passes in control mode`, () => {
      const tail = m.fbur(1, 0, 0, 5, 5); // proves the framing resumes at the right byte
      const all = Buffer.concat([handshake(8), s.bytes, tail]);
      for (const chunks of [[all], byteByByte(all)]) {
        const view = run("view", chunks);
        expect(view.close).toBeUndefined();
        expect(view.out).toEqual(Buffer.concat([handshake(8, 1), ...(s.view ? [s.bytes] : []), tail]));
        const control = run("control", chunks);
        expect(control.out).toEqual(Buffer.concat([handshake(8, 1), s.bytes, tail]));
      }
    });
  }

  it("SetEncodings with many encodings and ClientCutText of several MB stream through without buffering", () => {
    const encs = m.setEncodings(Array.from({ length: 5000 }, (_, i) => i - 2500));
    const big = m.cut(Buffer.alloc(5 * 1024 * 1024, 0x41));
    const all = Buffer.concat([handshake(8), encs, big, m.fbur(0, 0, 0, 1, 1)]);
    const chunks = randomChunks(all, 3, 64 * 1024);
    const view = run("view", chunks);
    expect(view.out).toEqual(Buffer.concat([handshake(8, 1), encs, m.fbur(0, 0, 0, 1, 1)]));
    const control = run("control", chunks);
    expect(control.out.equals(Buffer.concat([handshake(8, 1), encs, big, m.fbur(0, 0, 0, 1, 1)]))).toBe(true);
    expect(control.inputs).toEqual([{ kind: "cut", detail: { bytes: 5 * 1024 * 1024 } }]);
  });

  it("a pushed chunk that ends mid-message forwards nothing of a dropped message", () => {
    const f = new RfbClientFilter({ mode: "view" });
    f.push(handshake(8));
    const cut = m.cut("do not leak this");
    expect(f.push(cut.subarray(0, 10)).out.length).toBe(0);
    expect(f.push(cut.subarray(10)).out.length).toBe(0);
    expect(f.push(m.fbur(0, 0, 0, 1, 1)).out).toEqual(m.fbur(0, 0, 0, 1, 1));
  });
});

describe("any split or join of bytes", () => {
  for (const minor of [3, 7, 8]) {
    it(`RFB 3.${minor}: byte by byte gives the same bytes and input reports as one push`, () => {
      for (const mode of ["view", "control"] as const) {
        const whole = run(mode, [stream(minor)]);
        const bytes = run(mode, byteByByte(stream(minor)));
        expect(bytes.out).toEqual(mode === "view" ? expectedView(minor) : expectedControl(minor));
        expect(bytes.out).toEqual(whole.out);
        expect(bytes.inputs.filter((i) => i.kind !== "key")).toEqual(whole.inputs.filter((i) => i.kind !== "key"));
        const presses = (r: typeof whole) =>
          r.inputs.filter((i) => i.kind === "key").reduce((n, i) => n + (i.detail as { presses: number }).presses, 0);
        expect(presses(bytes)).toBe(presses(whole));
      }
    });
  }

  it("300 random chunkings (empty chunks included) give the same bytes, in both modes", () => {
    const all = Buffer.concat([stream(8), stream(8).subarray(handshake(8).length), m.cut(Buffer.alloc(3000, 1))]);
    const wantView = run("view", [all]).out;
    const wantControl = run("control", [all]).out;
    for (let seed = 1; seed <= 300; seed++) {
      const chunks = randomChunks(all, seed, 1 + (seed % 97));
      expect(run("view", chunks).out.equals(wantView), `view, seed ${seed}`).toBe(true);
      expect(run("control", chunks).out.equals(wantControl), `control, seed ${seed}`).toBe(true);
    }
  });

  it("forces the shared flag when ClientInit arrives alone or joined to the version", () => {
    for (const chunks of [[m.version(8), b(1), b(0)], [Buffer.concat([m.version(8), b(1, 0)])], byteByByte(handshake(8))]) {
      expect(run("view", chunks).out).toEqual(handshake(8, 1));
    }
  });
});

describe("unknown messages", () => {
  it("view mode closes on a message type it cannot frame, after forwarding what came before", () => {
    const before = m.fbur(0, 0, 0, 10, 10);
    const all = Buffer.concat([handshake(8), before, b(99, 1, 2, 3), m.key(true, 0x61)]);
    for (const chunks of [[all], byteByByte(all)]) {
      const { out, close, filter } = run("view", chunks);
      expect(close?.code).toBe(RFB_CLOSE.unsupported);
      expect(close!.code).toBeGreaterThanOrEqual(4400);
      expect(close!.code).toBeLessThan(4500);
      expect(close?.reason).toMatch(/message type 99/);
      expect(out).toEqual(Buffer.concat([handshake(8, 1), before]));
      expect(filter.closed).toBe(true);
      expect(filter.push(m.fbur(0, 0, 0, 1, 1)).out.length).toBe(0);
    }
  });

  it("view mode closes on an unknown QEMU subtype or audio operation", () => {
    expect(run("view", [handshake(8), b(255, 9, 0, 0)]).close?.code).toBe(RFB_CLOSE.unsupported);
    expect(run("view", [handshake(8), b(255, 1, 0, 7)]).close?.code).toBe(RFB_CLOSE.unsupported);
  });

  it("closes, in both modes, on a pixel format of other than 8, 16 or 32 bits per pixel, or a depth of 0 or above it (wayvnc exits on some)", () => {
    const before = m.fbur(0, 0, 0, 10, 10);
    for (const mode of ["view", "control"] as const) {
      for (const bpp of [0, 1, 24, 33]) {
        const bad = m.setPixelFormat();
        bad[4] = bpp;
        const all = Buffer.concat([handshake(8), before, bad, m.fbur(0, 0, 0, 1, 1)]);
        for (const chunks of [[all], byteByByte(all)]) {
          const { out, close } = run(mode, chunks);
          expect(close?.code).toBe(RFB_CLOSE.protocol);
          expect(close?.reason).toMatch(new RegExp(`${bpp} bits per pixel`));
          expect(out).toEqual(Buffer.concat([handshake(8, 1), before]));
        }
      }
      for (const [bpp, depth] of [[32, 0], [32, 33], [32, 40], [16, 24], [8, 0]]) {
        const bad = m.setPixelFormat();
        bad[4] = bpp!;
        bad[5] = depth!;
        const all = Buffer.concat([handshake(8), before, bad]);
        for (const chunks of [[all], byteByByte(all)]) {
          const { out, close } = run(mode, chunks);
          expect(close?.code).toBe(RFB_CLOSE.protocol);
          expect(close?.reason).toMatch(new RegExp(`depth of ${depth} at ${bpp} bits per pixel`));
          expect(out).toEqual(Buffer.concat([handshake(8, 1), before]));
        }
      }
      for (const [bpp, depth] of [[8, 3], [8, 8], [16, 15], [16, 16], [32, 24], [32, 32]]) {
        const good = m.setPixelFormat();
        good[4] = bpp!;
        good[5] = depth!;
        expect(run(mode, [handshake(8), good]).close).toBeUndefined();
      }
    }
  });

  it("control mode passes the rest unparsed (the VNC server judges it)", () => {
    const rest = Buffer.concat([b(99, 1, 2, 3), m.key(true, 0x61)]);
    const { out, close } = run("control", [handshake(8), rest]);
    expect(close).toBeUndefined();
    expect(out).toEqual(Buffer.concat([handshake(8, 1), rest]));
  });
});

describe("input reports (control mode)", () => {
  it("reports a click at x,y on each button-press transition, never on moves or releases", () => {
    const { inputs } = run("control", [
      handshake(8),
      m.pointer(0, 5, 5),
      m.pointer(1, 10, 20), // left down
      m.pointer(1, 15, 25), // drag
      m.pointer(0, 15, 25), // up
      m.pointer(4, 30, 40), // right down
      m.pointer(5, 30, 40), // left joins
      m.pointer(0, 30, 40),
      m.pointer(8, 50, 60), // wheel up
      m.pointer(0, 50, 60),
    ]);
    expect(inputs).toEqual([
      { kind: "pointer", detail: { x: 10, y: 20, button: 1 } },
      { kind: "pointer", detail: { x: 30, y: 40, button: 3 } },
      { kind: "pointer", detail: { x: 30, y: 40, button: 1 } },
      { kind: "pointer", detail: { x: 50, y: 60, button: 4 } },
    ]);
  });

  it("counts key presses (not releases), QEMU key events included, and never says which keys", () => {
    const keys = Buffer.concat(
      [..."hello"].flatMap((c) => [m.key(true, c.charCodeAt(0)), m.key(false, c.charCodeAt(0))]).concat([m.qemuKey(true, 0x20, 57), m.qemuKey(false, 0x20, 57)]),
    );
    const { inputs } = run("control", [handshake(8), keys]);
    expect(inputs).toEqual([{ kind: "key", detail: { presses: 6 } }]);
    expect(JSON.stringify(inputs)).not.toMatch(/104|0x68|"h"/);
  });

  it("reports cut text by its length only", () => {
    const { inputs } = run("control", [handshake(8), m.cut("password123")]);
    expect(inputs).toEqual([{ kind: "cut", detail: { bytes: 11 } }]);
  });

  it("reports a plain cut of any size split anywhere, and an empty one as 0 bytes", () => {
    const all = Buffer.concat([handshake(8), m.cut("abc"), m.cut("")]);
    for (const chunks of [[all], byteByByte(all)]) {
      expect(run("control", chunks).inputs).toEqual([
        { kind: "cut", detail: { bytes: 3 } },
        { kind: "cut", detail: { bytes: 0 } },
      ]);
    }
  });

  it("view mode reports nothing", () => {
    const { inputs } = run("view", [handshake(8), m.pointer(1, 1, 1), m.key(true, 0x61), m.cut("x")]);
    expect(inputs).toEqual([]);
  });
});

describe("holding update requests (flow control towards a slow viewer)", () => {
  it("holds requests while asked to, merges them into one, and releases it on a message boundary", () => {
    let hold = false;
    const f = new RfbClientFilter({ mode: "view", holdUpdates: () => hold });
    expect(f.push(handshake(8)).out).toEqual(handshake(8, 1));
    expect(f.release()).toBeUndefined();
    expect(f.push(m.fbur(1, 0, 0, 100, 100)).out).toEqual(m.fbur(1, 0, 0, 100, 100));
    hold = true;
    const burst = Buffer.concat([m.fbur(1, 10, 20, 30, 40), m.setEncodings([0]), m.fbur(1, 100, 5, 50, 10), m.pointer(1, 1, 1)]);
    for (const chunks of [[burst], byteByByte(burst)]) {
      const out = Buffer.concat(chunks.map((c) => f.push(c).out));
      expect(out).toEqual(m.setEncodings([0]));
      expect(f.holding).toBe(2);
      // The bounding box of both, still incremental.
      expect(f.release()).toEqual(m.fbur(1, 10, 5, 140, 55));
      expect(f.holding).toBe(0);
      expect(f.release()).toBeUndefined();
    }
  });

  it("a held non-incremental request makes the merged one non-incremental", () => {
    const h = new HeldUpdateRequests();
    h.add(m.fbur(1, 0, 0, 10, 10));
    h.add(m.fbur(0, 1270, 790, 10, 10));
    expect(h.take()).toEqual(m.fbur(0, 0, 0, 1280, 800));
    expect(h.take()).toBeUndefined();
  });

  it("does not release in the middle of a message body", () => {
    let hold = true;
    const f = new RfbClientFilter({ mode: "control", holdUpdates: () => hold });
    f.push(handshake(8));
    f.push(m.fbur(0, 0, 0, 1, 1));
    const cut = m.cut("x".repeat(100));
    expect(f.push(cut.subarray(0, 20)).out).toEqual(cut.subarray(0, 20));
    expect(f.release()).toBeUndefined();
    expect(f.holding).toBe(1);
    hold = false;
    expect(f.push(cut.subarray(20)).out).toEqual(cut.subarray(20));
    expect(f.release()).toEqual(m.fbur(0, 0, 0, 1, 1));
  });
});

// The extended clipboard (a ClientCutText with a negative length), as noVNC 1.7 sends it
// (core/rfb.js RFB.messages.extendedClipboard*): 4 bytes of flags (actions in the top byte,
// formats in the low ones), then per action: Caps the maximum size of each format, Provide a
// zlib stream (one per message, full-flushed) of a 4-byte size and the NUL-terminated text with
// CRLF line ends, Request, Peek and Notify nothing more.
const CB = { text: 1, rtf: 2, html: 4, caps: 1 << 24, request: 1 << 25, peek: 1 << 26, notify: 1 << 27, provide: 1 << 28 };
const flags = (actions: number, formats: number) => b(...u32((actions | formats) >>> 0));
const clip = {
  // What noVNC answers a server's Caps with, on every connection: all five actions, text of size 0.
  caps: () => m.cutExtended(Buffer.concat([flags(CB.caps | CB.request | CB.peek | CB.notify | CB.provide, CB.text), b(...u32(0))])),
  request: () => m.cutExtended(flags(CB.request, CB.text)),
  peek: () => m.cutExtended(flags(CB.peek, 0)),
  notify: () => m.cutExtended(flags(CB.notify, CB.text)),
  notifyNone: () => m.cutExtended(flags(CB.notify, 0)),
  provide: (text: string, formats = CB.text) => {
    const t = Buffer.from(text.replace(/\r\n|\r|\n/g, "\r\n") + "\0", "utf8");
    const z = deflateSync(Buffer.concat([b(...u32(t.length)), t]), { finishFlush: zlibConstants.Z_FULL_FLUSH });
    return m.cutExtended(Buffer.concat([flags(CB.provide, formats), z]));
  },
};

describe("extended clipboard", () => {
  const notPastes: [string, Buffer][] = [
    ["Caps (noVNC's answer to the server's, the phantom 8-byte paste)", clip.caps()],
    ["Request", clip.request()],
    ["Peek", clip.peek()],
    ["Notify with text", clip.notify()],
    ["Notify with nothing", clip.notifyNone()],
  ];
  for (const [name, msg] of notPastes) {
    it(`${name}: passes in control mode, dropped in view mode, and is not a paste`, () => {
      const tail = m.fbur(1, 0, 0, 5, 5);
      const all = Buffer.concat([handshake(8), msg, tail]);
      for (const chunks of [[all], byteByByte(all)]) {
        const control = run("control", chunks);
        expect(control.close).toBeUndefined();
        expect(control.out).toEqual(Buffer.concat([handshake(8, 1), msg, tail]));
        expect(control.inputs).toEqual([]);
        const view = run("view", chunks);
        expect(view.out).toEqual(Buffer.concat([handshake(8, 1), tail]));
        expect(view.inputs).toEqual([]);
      }
    });
  }

  it("Provide with text is a paste of the text's size as sent (UTF-8, CRLF, without the NUL), however split", () => {
    const msg = clip.provide("héllo\nworld");
    const all = Buffer.concat([handshake(8), clip.caps(), clip.notify(), msg, m.fbur(1, 0, 0, 5, 5)]);
    for (const chunks of [[all], byteByByte(all), ...[1, 2, 3].map((seed) => randomChunks(all, seed, 7))]) {
      const control = run("control", chunks);
      expect(control.out).toEqual(Buffer.concat([handshake(8, 1), clip.caps(), clip.notify(), msg, m.fbur(1, 0, 0, 5, 5)]));
      expect(control.inputs).toEqual([{ kind: "cut", detail: { bytes: Buffer.byteLength("héllo\r\nworld") } }]);
      expect(run("view", chunks).inputs).toEqual([]);
    }
  });

  it("Provide of a large text reads its size from the start of the stream only", () => {
    const r = rng(5);
    const text = Array.from({ length: 20_000 }, () => String.fromCharCode(33 + Math.floor(r() * 90))).join("");
    const msg = clip.provide(text);
    expect(msg.length).toBeGreaterThan(4096);
    const { inputs, out } = run("control", randomChunks(Buffer.concat([handshake(8), msg]), 9, 300));
    expect(out.subarray(handshake(8).length)).toEqual(msg);
    expect(inputs).toEqual([{ kind: "cut", detail: { bytes: 20_000 } }]);
  });

  it("Provide of an empty text is a paste of 0 bytes; one without text, or with a broken stream, is none", () => {
    expect(run("control", [handshake(8), clip.provide("")]).inputs).toEqual([{ kind: "cut", detail: { bytes: 0 } }]);
    expect(run("control", [handshake(8), clip.provide("<b>x</b>", CB.html)]).inputs).toEqual([]);
    const broken = m.cutExtended(Buffer.concat([flags(CB.provide, CB.text), b(5, 6, 7)]));
    const r = run("control", [handshake(8), broken, m.fbur(0, 0, 0, 1, 1)]);
    expect(r.inputs).toEqual([]);
    expect(r.out).toEqual(Buffer.concat([handshake(8, 1), broken, m.fbur(0, 0, 0, 1, 1)]));
  });

  it("a payload too short for its flags is framed and passed, never a paste", () => {
    const short = m.cutExtended(b(0x10, 0));
    const r = run("control", [handshake(8), short, m.fbur(0, 0, 0, 1, 1)]);
    expect(r.out).toEqual(Buffer.concat([handshake(8, 1), short, m.fbur(0, 0, 0, 1, 1)]));
    expect(r.inputs).toEqual([]);
  });
});
