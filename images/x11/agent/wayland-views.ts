// What a Wayland screen shows: its windows, from sway's tree, and its frames, from wayvnc (or
// grim, for the pointer and scaling; docs/decisions/0030). Window ids are sway's container ids, in the X11 form ("0x…").
import crypto from "node:crypto";
import { runTool } from "./proc";
import { encodePng } from "./png";
import { formatWindowId, type WindowInfo } from "./windows";
import { IPC_GET_TREE } from "./sway-ipc";
import type { WaylandDesk } from "./wayland";
import { AgentError } from "./errors";
import type { CaptureOptions, Frame, Rect } from "./frame-types";
import type { Screen } from "./screen";
import type { Arrange } from "./schema";
import { sleep } from "./util";

interface SwayNode {
  id: number;
  type: string;
  name: string | null;
  pid?: number;
  app_id?: string | null;
  window_properties?: { class?: string; instance?: string; title?: string };
  rect: { x: number; y: number; width: number; height: number };
  focused: boolean;
  visible?: boolean;
  fullscreen_mode?: number;
  nodes: SwayNode[];
  floating_nodes: SwayNode[];
}

function collect(node: SwayNode, scratch: boolean, out: { n: SwayNode; scratch: boolean }[]): void {
  const inScratch = scratch || node.name === "__i3_scratch";
  if ((node.type === "con" || node.type === "floating_con") && node.pid !== undefined) out.push({ n: node, scratch: inScratch });
  for (const c of node.nodes ?? []) collect(c, inScratch, out);
  for (const c of node.floating_nodes ?? []) collect(c, inScratch, out);
}

/**
 * Whether `text` holds a character beyond U+FFFF while Chromium has the keyboard: such a key
 * inserts nothing whole there (Chromium on Wayland takes one UTF-16 unit from a key event), so
 * the character is typed as its two surrogates (wayland.ts surrogateUnits). Other apps get it
 * as one keysym, as on X11.
 */
export async function astralIntoChromium(desk: WaylandDesk, text: string): Promise<boolean> {
  if (!Array.from(text).some((c) => (c.codePointAt(0) ?? 0) > 0xffff)) return false;
  const active = (await waylandWindows(desk)).find((w) => w.active);
  return !!active && /chrom/i.test(active.class);
}

/** Top-level windows, in sway's tree order; `active` is the one with the keyboard focus. */
export async function waylandWindows(desk: WaylandDesk): Promise<WindowInfo[]> {
  const tree = await desk.ipc.request<SwayNode>(IPC_GET_TREE);
  const found: { n: SwayNode; scratch: boolean }[] = [];
  collect(tree, false, found);
  return found.map(({ n, scratch }) => {
    const klass = n.app_id ?? n.window_properties?.class ?? "";
    return {
      id: formatWindowId(n.id),
      title: n.name ?? "",
      class: klass,
      instance: n.window_properties?.instance ?? klass,
      pid: n.pid ?? null,
      x: n.rect.x,
      y: n.rect.y,
      width: n.rect.width,
      height: n.rect.height,
      active: n.focused,
      // The scratchpad is sway's nearest thing to minimised: there but not shown.
      minimised: scratch,
      maximised: n.fullscreen_mode === 1,
    };
  });
}

export async function findWaylandWindow(desk: WaylandDesk, ref: string): Promise<WindowInfo> {
  const windows = await waylandWindows(desk);
  const r = ref.trim();
  if (/^0x[0-9a-f]+$/i.test(r) || /^\d+$/.test(r)) {
    const id = r.startsWith("0x") || r.startsWith("0X") ? parseInt(r.slice(2), 16) : Number(r);
    const w = windows.find((x) => parseInt(x.id.slice(2), 16) === id);
    if (w) return w;
    throw new AgentError("not_found", `no window ${ref} on this screen`);
  }
  const q = r.toLowerCase();
  const hit =
    windows.filter((w) => w.class.toLowerCase() === q || w.instance.toLowerCase() === q).pop() ??
    windows.filter((w) => w.title.toLowerCase().includes(q)).pop();
  if (!hit) throw new AgentError("not_found", `no window matches "${ref}" on this screen`);
  return hit;
}

export async function awaitWaylandWindow(desk: WaylandDesk, klass: string, withinMs: number): Promise<WindowInfo> {
  const q = klass.trim().toLowerCase();
  const deadline = Date.now() + withinMs;
  for (;;) {
    const w = (await waylandWindows(desk)).find((x) => x.class.toLowerCase() === q || x.instance.toLowerCase() === q);
    if (w) return w;
    if (Date.now() >= deadline) throw new AgentError("timeout", `no window of class "${klass}" appeared within ${withinMs} ms`);
    await sleep(50);
  }
}

/**
 * Focus, close or arrange through sway's commands. sway tiles: moving or sizing a window floats
 * it first; maximise is fullscreen, minimise the scratchpad, restore undoes either. As on X11, a
 * size keeps the window's place (sway centres a window it floats) and restore with nothing to
 * undo changes nothing (not a floating window tiled again).
 */
export async function onWaylandWindow(desk: WaylandDesk, ref: string, what: { do: "focus" } | { do: "close" } | ({ do: "arrange" } & Arrange)): Promise<Record<string, unknown>> {
  const w = await findWaylandWindow(desk, ref);
  const id = parseInt(w.id.slice(2), 16);
  const on = (cmd: string) => desk.ipc.command(`[con_id=${id}] ${cmd}`);
  if (what.do === "close") {
    await on("kill");
    return { window: w.id, closed: true };
  }
  let done: (x: WindowInfo) => boolean = () => true;
  if (what.do === "focus") await on("focus");
  else if (what.how === "at") {
    await on(`floating enable, move position ${Math.round(what.to.x)} ${Math.round(what.to.y)}`);
    done = (x) => x.x === Math.round(what.to.x) && x.y === Math.round(what.to.y);
  } else if (what.how === "size") {
    await on(`floating enable, resize set ${what.width} ${what.height}, move position ${w.x} ${w.y}`);
    done = (x) => Math.abs(x.width - what.width) <= 16 && Math.abs(x.height - what.height) <= 16 && x.x === w.x && x.y === w.y;
  } else if (what.how === "maximise") {
    await on("fullscreen enable");
    done = (x) => x.maximised;
  } else if (what.how === "minimise") {
    await on("move scratchpad");
    done = (x) => x.minimised;
  } else {
    if (w.minimised) await on("scratchpad show, floating disable");
    else if (w.maximised) await on("fullscreen disable");
    done = (x) => !x.minimised && !x.maximised;
  }
  // sway applies a layout change once the client has drawn at its new size: wait for it a little.
  const deadline = Date.now() + 2000;
  for (;;) {
    const now = (await waylandWindows(desk)).find((x) => x.id === w.id);
    if (!now) throw new AgentError("not_found", `window ${w.id} went away`);
    if (done(now) || Date.now() >= deadline) return { window: now };
    await sleep(25);
  }
}

/** PPM (P6, maxval 255) from grim into RGB rows. */
function parsePpm(buf: Buffer): { rgb: Buffer; width: number; height: number } {
  // Header: "P6", width, height, maxval, each after whitespace; one whitespace byte before the pixels.
  let pos = 0;
  const fields: string[] = [];
  while (fields.length < 4) {
    while (pos < buf.length && /\s/.test(String.fromCharCode(buf[pos]))) pos++;
    let end = pos;
    while (end < buf.length && !/\s/.test(String.fromCharCode(buf[end]))) end++;
    fields.push(buf.toString("latin1", pos, end));
    pos = end;
  }
  pos++;
  const [magic, w, h, max] = fields;
  if (magic !== "P6" || max !== "255") throw new AgentError("failed", `grim wrote an image this agent does not read (${magic}, maxval ${max})`);
  const width = Number(w);
  const height = Number(h);
  const rgb = buf.subarray(pos, pos + width * height * 3);
  if (rgb.length !== width * height * 3) throw new AgentError("failed", "grim's image is cut short");
  return { rgb, width, height };
}

/** grim's pixels of `r` (RGB rows) and their hash. */
async function grab(screen: Screen, r: Rect, scale: number, pointer: boolean): Promise<{ rgb: Buffer; width: number; height: number; hash: string }> {
  const args = ["-t", "ppm", "-g", `${r.x},${r.y} ${r.width}x${r.height}`];
  if (scale !== 100) args.push("-s", String(scale / 100));
  if (pointer) args.push("-c");
  args.push("-");
  const out = await runTool("grim", args, { display: screen.display, timeoutMs: 10_000 });
  if (out.code !== 0) throw new AgentError("failed", `grim exited with ${out.code}: ${out.stderr.trim().slice(0, 300)}`);
  const { rgb, width, height } = parsePpm(out.stdout);
  const hash = crypto.createHash("sha1").update(`wl;${r.x},${r.y},${width},${height},${pointer ? 1 : 0};`).update(rgb).digest("hex");
  return { rgb, width, height, hash };
}

/** `r` of wayvnc's current frame, BGRX rows, and the key naming that area. */
async function fromWayvnc(desk: WaylandDesk, r: Rect): Promise<{ bgrx: Buffer; width: number; height: number; key: string }> {
  const full = await desk.frames.capture();
  let bgrx = full;
  if (r.x !== 0 || r.y !== 0 || r.width !== desk.width || r.height !== desk.height) {
    bgrx = Buffer.allocUnsafe(r.width * r.height * 4);
    for (let row = 0; row < r.height; row++) {
      const from = ((r.y + row) * desk.width + r.x) * 4;
      full.copy(bgrx, row * r.width * 4, from, from + r.width * 4);
    }
  }
  return { bgrx, width: r.width, height: r.height, key: `wlv;${r.x},${r.y},${r.width},${r.height}` };
}

/** Screen hashes by the frame Buffer they were taken of: a still screen gives the same Buffer. */
const screenHashes = new WeakMap<Buffer, string>();

/** The hash of the whole screen, for change detection (wait_still polls it every 10–50 ms). */
export async function waylandScreenHash(_screen: Screen, desk: WaylandDesk): Promise<string> {
  const got = await fromWayvnc(desk, { x: 0, y: 0, width: desk.width, height: desk.height });
  let hash = screenHashes.get(got.bgrx);
  if (hash === undefined) {
    hash = crypto.createHash("sha1").update(`${got.key};`).update(got.bgrx).digest("hex");
    screenHashes.set(got.bgrx, hash);
  }
  return hash;
}

/**
 * A frame of a Wayland screen, in the same shape as X11's: the hash of the pixels, and a PNG only
 * when the caller does not already have that hash. Scaling is grim's (`-s`); the pointer is drawn
 * with `-c`.
 */
export async function waylandFrame(screen: Screen, desk: WaylandDesk, opts: CaptureOptions, have?: string): Promise<Frame> {
  const scale = opts.scale ?? 100;
  if (!(scale >= 1 && scale <= 400)) throw new AgentError("bad_request", `scale ${scale} is not within 1–400`);
  let r: Rect = { x: 0, y: 0, width: desk.width, height: desk.height };
  if (opts.window !== undefined) {
    const w = await findWaylandWindow(desk, opts.window);
    if (w.minimised) throw new AgentError("failed", `window ${w.id} is in the scratchpad, not on the screen`);
    r = { x: w.x, y: w.y, width: w.width, height: w.height };
  }
  if (opts.region) {
    const g = opts.region;
    if (opts.window === undefined && (g.x < 0 || g.y < 0 || g.x + g.width > desk.width || g.y + g.height > desk.height)) {
      throw new AgentError("bad_request", `region ${g.x},${g.y} ${g.width}×${g.height} is not inside the ${desk.width}×${desk.height} screen`);
    }
    r = { x: r.x + g.x, y: r.y + g.y, width: g.width, height: g.height };
  }
  const x0 = Math.max(0, r.x);
  const y0 = Math.max(0, r.y);
  const x1 = Math.min(desk.width, r.x + r.width);
  const y1 = Math.min(desk.height, r.y + r.height);
  if (x1 <= x0 || y1 <= y0) throw new AgentError("bad_request", "the area to capture is not on the screen");
  const rect = { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
  // wayvnc's frame when it is the picture asked for; grim draws the pointer and scales.
  const plain = scale === 100 && !opts.pointer;
  if (plain) return fromWayvncFrame(screen, await fromWayvnc(desk, rect), have);
  const got = await grab(screen, rect, scale, opts.pointer === true);
  const { width, height, hash } = got;
  if (have && have === hash) return { hash, unchanged: true, width, height };
  let png = screen.pngCache.get(hash);
  if (!png) {
    png = await encodePng(got.rgb, width, height);
    cachePng(screen, hash, png);
  }
  return { hash, unchanged: false, png_base64: png.toString("base64"), width, height };
}

function cachePng(screen: Screen, hash: string, png: Buffer): void {
  screen.pngCache.set(hash, png);
  while (screen.pngCache.size > 4) screen.pngCache.delete(screen.pngCache.keys().next().value as string);
}

/**
 * A frame of wayvnc's pixels, named as X11's are: the last frame's hash when the pixels are
 * byte-equal to it (a memcmp), else a SHA-1 of the PNG, a twentieth of the pixels' size to hash.
 */
async function fromWayvncFrame(screen: Screen, got: { bgrx: Buffer; width: number; height: number; key: string }, have?: string): Promise<Frame> {
  const { width, height, key } = got;
  const last = screen.lastPixels;
  const known = last && last.key === key && (last.px === got.bgrx || last.px.equals(got.bgrx)) ? last.hash : undefined;
  if (have && have === known) return { hash: known, unchanged: true, width, height };
  let png = known === undefined ? undefined : screen.pngCache.get(known);
  png ??= await screen.framePng.encode(got.bgrx, width, height);
  const hash = known ?? crypto.createHash("sha1").update(`${key};png;`).update(png).digest("hex");
  if (known === undefined) screen.lastPixels = { key, px: got.bgrx, hash };
  if (!screen.pngCache.has(hash)) cachePng(screen, hash, png);
  if (have && have === hash) return { hash, unchanged: true, width, height };
  return { hash, unchanged: false, png_base64: png.toString("base64"), width, height };
}
