// Typed wrappers for the handful of core, XTEST and XFIXES requests the agent uses.
import { Req, type XConnection } from "./x11-wire";

export const ATOM_STRING = 31;
export const ATOM_WM_NAME = 39;
export const ATOM_WM_CLASS = 67;
export const ATOM_CARDINAL = 6;
export const ATOM_WINDOW = 33;
export const ATOM_ATOM = 4;

export const EV_KEY_PRESS = 2;
export const EV_KEY_RELEASE = 3;
export const EV_BUTTON_PRESS = 4;
export const EV_BUTTON_RELEASE = 5;
export const EV_MOTION = 6;
export const EV_MAPPING_NOTIFY = 34;

export interface Extension {
  present: boolean;
  major: number;
  firstEvent: number;
  firstError: number;
}

export async function queryExtension(c: XConnection, name: string): Promise<Extension> {
  const n = Buffer.from(name, "latin1");
  const r = await c.request(new Req(98).u16(n.length).pad(2).bytes(n).finish());
  return { present: r[8] === 1, major: r[9], firstEvent: r[10], firstError: r[11] };
}

/** A cheap round trip: proves the server is alive and that every earlier request was processed. */
export async function getInputFocus(c: XConnection, timeoutMs?: number): Promise<number> {
  const r = await c.request(new Req(43).finish(), timeoutMs);
  return r.readUInt32LE(8);
}

export async function internAtom(c: XConnection, name: string, onlyIfExists = false): Promise<number> {
  const n = Buffer.from(name, "latin1");
  const r = await c.request(new Req(16, onlyIfExists ? 1 : 0).u16(n.length).pad(2).bytes(n).finish());
  return r.readUInt32LE(8);
}

export interface Property {
  type: number;
  format: number;
  value: Buffer;
}

export async function getProperty(c: XConnection, window: number, property: number, type = 0, maxLongs = 65536): Promise<Property | null> {
  const r = await c.request(new Req(20, 0).u32(window).u32(property).u32(type).u32(0).u32(maxLongs).finish());
  const format = r[1];
  const ptype = r.readUInt32LE(8);
  if (ptype === 0) return null;
  const count = r.readUInt32LE(16);
  const bytes = format === 0 ? 0 : count * (format / 8);
  return { type: ptype, format, value: r.subarray(32, 32 + bytes) };
}

export function propU32s(p: Property | null): number[] {
  if (!p || p.format !== 32) return [];
  const out: number[] = [];
  for (let i = 0; i + 4 <= p.value.length; i += 4) out.push(p.value.readUInt32LE(i));
  return out;
}

/** Where a reply's number fields sit: name → [wire type, byte offset] (as the protocol spec lists them). */
type Layout = Record<string, readonly ["u8" | "i16" | "u16" | "u32", number]>;
type Fields<L extends Layout> = { [K in keyof L]: number };

function readFields<L extends Layout>(r: Buffer, layout: L): Fields<L> {
  const out: Record<string, number> = {};
  for (const [name, [type, at]] of Object.entries(layout)) {
    out[name] = type === "u8" ? r[at] : type === "i16" ? r.readInt16LE(at) : type === "u16" ? r.readUInt16LE(at) : r.readUInt32LE(at);
  }
  return out as Fields<L>;
}

const GEOMETRY = { depth: ["u8", 1], root: ["u32", 8], x: ["i16", 12], y: ["i16", 14], width: ["u16", 16], height: ["u16", 18], border: ["u16", 20] } as const;
export type Geometry = Fields<typeof GEOMETRY>;

export async function getGeometry(c: XConnection, drawable: number): Promise<Geometry> {
  return readFields(await c.request(new Req(14).u32(drawable).finish()), GEOMETRY);
}

export async function translateCoordinates(c: XConnection, src: number, dst: number, x: number, y: number): Promise<{ x: number; y: number; child: number }> {
  const r = await c.request(new Req(40).u32(src).u32(dst).i16(x).i16(y).finish());
  return { child: r.readUInt32LE(8), x: r.readInt16LE(12), y: r.readInt16LE(14) };
}

export async function queryTree(c: XConnection, window: number): Promise<{ root: number; parent: number; children: number[] }> {
  const r = await c.request(new Req(15).u32(window).finish());
  const n = r.readUInt16LE(16);
  const children: number[] = [];
  for (let i = 0; i < n; i++) children.push(r.readUInt32LE(32 + i * 4));
  return { root: r.readUInt32LE(8), parent: r.readUInt32LE(12), children };
}

export async function getWindowAttributes(c: XConnection, window: number): Promise<{ mapState: number; overrideRedirect: boolean; windowClass: number }> {
  const r = await c.request(new Req(3).u32(window).finish());
  return { windowClass: r.readUInt16LE(12), mapState: r[26], overrideRedirect: r[27] === 1 };
}

const POINTER = { root: ["u32", 8], child: ["u32", 12], x: ["i16", 16], y: ["i16", 18], mask: ["u16", 24] } as const;
export type PointerState = Fields<typeof POINTER> & { sameScreen: boolean };

export async function queryPointer(c: XConnection, window: number): Promise<PointerState> {
  const r = await c.request(new Req(38).u32(window).finish());
  return { ...readFields(r, POINTER), sameScreen: r[1] === 1 };
}

/** ZPixmap image; `data` is the reply body (rows of `bitsPerPixel` pixels, padded per format). */
export async function getImage(c: XConnection, drawable: number, x: number, y: number, width: number, height: number): Promise<{ depth: number; data: Buffer }> {
  const r = await c.request(new Req(73, 2).u32(drawable).i16(x).i16(y).u16(width).u16(height).u32(0xffffffff).finish(), 10_000);
  return { depth: r[1], data: r.subarray(32) };
}

export async function getKeyboardMapping(c: XConnection, first: number, count: number): Promise<{ perKeycode: number; keysyms: Uint32Array }> {
  const r = await c.request(new Req(101).u8(first).u8(count).pad(2).finish());
  const per = r[1];
  const n = r.readUInt32LE(4);
  const keysyms = new Uint32Array(n);
  for (let i = 0; i < n; i++) keysyms[i] = r.readUInt32LE(32 + i * 4);
  return { perKeycode: per, keysyms };
}

export function changeKeyboardMapping(c: XConnection, first: number, perKeycode: number, keysyms: number[]): void {
  const count = keysyms.length / perKeycode;
  const req = new Req(100, count, 8 + keysyms.length * 4).u8(first).u8(perKeycode).pad(2);
  for (const k of keysyms) req.u32(k);
  c.send(req.finish());
}

export async function getModifierMapping(c: XConnection): Promise<number[][]> {
  const r = await c.request(new Req(119).finish());
  const per = r[1];
  const mods: number[][] = [];
  for (let m = 0; m < 8; m++) {
    const codes: number[] = [];
    for (let i = 0; i < per; i++) {
      const k = r[32 + m * per + i];
      if (k) codes.push(k);
    }
    mods.push(codes);
  }
  return mods;
}

/** Bit vector of keycodes currently down. */
export async function queryKeymap(c: XConnection): Promise<Buffer> {
  const r = await c.request(new Req(44).finish());
  return r.subarray(8, 40);
}

export function sendClientMessage(c: XConnection, root: number, window: number, type: number, data: number[]): void {
  const ev = Buffer.alloc(32);
  ev[0] = 33; // ClientMessage
  ev[1] = 32;
  ev.writeUInt32LE(window, 4);
  ev.writeUInt32LE(type, 8);
  for (let i = 0; i < 5; i++) ev.writeUInt32LE((data[i] ?? 0) >>> 0, 12 + i * 4);
  // SubstructureRedirect | SubstructureNotify: how EWMH asks the window manager.
  c.send(new Req(25, 0).u32(root).u32(0x180000).bytes(ev).finish());
}

export const CW_X = 1;
export const CW_Y = 2;
export const CW_WIDTH = 4;
export const CW_HEIGHT = 8;
export const CW_STACK_MODE = 64;

export function configureWindow(c: XConnection, window: number, values: Array<[number, number]>): void {
  const sorted = [...values].sort((a, b) => a[0] - b[0]);
  const mask = sorted.reduce((m, [bit]) => m | bit, 0);
  const req = new Req(12).u32(window).u16(mask).pad(2);
  for (const [, v] of sorted) req.i32(v);
  c.send(req.finish());
}

export function setInputFocus(c: XConnection, window: number): void {
  // RevertTo Parent, CurrentTime.
  c.send(new Req(42, 2).u32(window).u32(0).finish());
}

export function mapWindow(c: XConnection, window: number): void {
  c.send(new Req(8).u32(window).finish());
}

// ---- XTEST

/** `delayMs`: the server generates the event that long after the previous one it handled for us. */
export function fakeInput(c: XConnection, xtestMajor: number, type: number, detail: number, root = 0, x = 0, y = 0, delayMs = 0): void {
  const req = new Req(xtestMajor, 2, 36).u8(type).u8(detail).pad(2).u32(delayMs).u32(root).pad(8).i16(x).i16(y).pad(7).u8(0);
  c.send(req.finish());
}

export async function xtestVersion(c: XConnection, major: number): Promise<{ major: number; minor: number }> {
  const r = await c.request(new Req(major, 0).u8(2).pad(1).u16(2).finish());
  return { major: r[1], minor: r.readUInt16LE(8) };
}

// ---- XFIXES

export async function xfixesQueryVersion(c: XConnection, major: number): Promise<void> {
  await c.request(new Req(major, 0).u32(4).u32(0).finish());
}

export interface CursorImage {
  x: number;
  y: number;
  width: number;
  height: number;
  xhot: number;
  yhot: number;
  serial: number;
  /** ARGB, premultiplied, one CARD32 per pixel. */
  argb: Buffer;
}

export async function xfixesGetCursorImage(c: XConnection, major: number): Promise<CursorImage> {
  const r = await c.request(new Req(major, 4).finish());
  const width = r.readUInt16LE(12);
  const height = r.readUInt16LE(14);
  return {
    x: r.readInt16LE(8),
    y: r.readInt16LE(10),
    width,
    height,
    xhot: r.readUInt16LE(16),
    yhot: r.readUInt16LE(18),
    serial: r.readUInt32LE(20),
    argb: r.subarray(32, 32 + width * height * 4),
  };
}

// ---- Events and ClientMessages to one client

export const EVENT_MASK_SUBSTRUCTURE_NOTIFY = 0x80000;
export const EV_CLIENT_MESSAGE = 33;

export const EVENT_MASK_STRUCTURE_NOTIFY = 0x20000;
export const EVENT_MASK_PROPERTY_CHANGE = 0x400000;
export const EV_DESTROY_NOTIFY = 17;
/**
 * This connection's mask on the root window, one for all its users (a new mask replaces the old):
 * window changes (window-watch.ts), pongs sent to the root (key-delivery.ts), and the root's
 * client list and active window.
 */
export const ROOT_EVENT_MASK = EVENT_MASK_SUBSTRUCTURE_NOTIFY | EVENT_MASK_PROPERTY_CHANGE;
export const EV_CONFIGURE_NOTIFY = 22;
export const EV_PROPERTY_NOTIFY = 28;

/**
 * Sets this connection's event mask on `window` (ChangeWindowAttributes, CWEventMask). `quiet`:
 * the window may be gone already, and that is no error of anyone's.
 */
export function selectEvents(c: XConnection, window: number, mask: number, quiet = false): void {
  const req = new Req(2).u32(window).u32(0x800).u32(mask).finish();
  if (quiet) c.sendQuiet(req);
  else c.send(req);
}

/**
 * A ClientMessage sent to `window` with no event mask: the server hands it to the client that
 * created the window (how WM_PROTOCOLS messages such as WM_DELETE_WINDOW and _NET_WM_PING go).
 */
export function sendClientMessageTo(c: XConnection, window: number, type: number, data: number[]): void {
  const ev = Buffer.alloc(32);
  ev[0] = EV_CLIENT_MESSAGE;
  ev[1] = 32;
  ev.writeUInt32LE(window, 4);
  ev.writeUInt32LE(type, 8);
  for (let i = 0; i < 5; i++) ev.writeUInt32LE((data[i] ?? 0) >>> 0, 12 + i * 4);
  c.send(new Req(25, 0).u32(window).u32(0).bytes(ev).finish());
}

// ---- X-Resource

/** QueryVersion: servers answer QueryClientIds only to clients that said which version they speak. */
export async function xresQueryVersion(c: XConnection, major: number): Promise<void> {
  await c.request(new Req(major, 0).u8(1).u8(2).pad(2).finish());
}

/** The PID of the local client that owns `xid` (QueryClientIds, LocalClientPIDMask), or null. */
export async function xresClientPid(c: XConnection, major: number, xid: number): Promise<number | null> {
  const r = await c.request(new Req(major, 4).u32(1).u32(xid).u32(2).finish());
  const n = r.readUInt32LE(8);
  let off = 32;
  for (let i = 0; i < n && off + 12 <= r.length; i++) {
    const mask = r.readUInt32LE(off + 4);
    const words = r.readUInt32LE(off + 8);
    if (mask === 2 && words >= 1 && off + 16 <= r.length) return r.readUInt32LE(off + 12);
    off += 12 + words * 4;
  }
  return null;
}

// ---- DAMAGE (change tracking, so an unchanged screen is known without reading its pixels)

/** DamageReportNonEmpty: one DamageNotify each time the damage region goes from empty to not. */
export const DAMAGE_REPORT_NON_EMPTY = 3;

export async function damageQueryVersion(c: XConnection, major: number): Promise<void> {
  await c.request(new Req(major, 0).u32(1).u32(1).finish());
}

/** DamageCreate on `drawable`; a window's damage includes what is drawn in its inferiors. */
export function damageCreate(c: XConnection, major: number, damage: number, drawable: number, level: number): void {
  c.send(new Req(major, 1).u32(damage).u32(drawable).u8(level).pad(3).finish());
}

/** DamageSubtract with no regions: empties the damage, so the next drawing is reported again. */
export function damageSubtractAll(c: XConnection, major: number, damage: number): void {
  c.send(new Req(major, 3).u32(damage).u32(0).u32(0).finish());
}
