import { agentCall } from "~/protocol/agent";
import { ApiError } from "~/utils/api-error.server";
import type { Actor } from "./actor";
import type { TabPage } from "./page-browser.server";
import { cdpSend, inWorld } from "./page-content-world.server";
import { recordFileWritten } from "./recorder.server";
import { type ScreenTarget, callAgent } from "./screen.server";
import { ariaTree, issue, refState } from "./page-element-snap.server";
import { log } from "~/utils/log.server";

// `page_shot` and `pdf` (seed 000: POST …/page/screenshot, …/page/pdf). A screenshot is
// Playwright's (the viewport or the full page, png, jpeg or webp), in device pixels like a frame,
// and its image is named like a frame's: `png_base64`, `jpeg_base64` or `webp_base64`. With
// `annotate`, each control of the page's aria snapshot (the refs `on_page` takes) is outlined and
// labelled with its ref, drawn on the image in the page's isolated world (an OffscreenCanvas), so
// the page itself is never changed for it. A PDF is Chromium's own print (DevTools
// Page.printToPDF).

export interface ShotQuery {
  full?: boolean;
  format?: "png" | "jpeg" | "webp";
  quality?: number;
  annotate?: boolean;
}

export interface PdfQuery {
  landscape?: boolean;
  no_background?: boolean;
  path?: string;
}

const SHOT_MS = 10_000;
const PDF_MS = 60_000;
const DEFAULT_QUALITY = 80;

/** Roles a person acts on: the ones `annotate` labels. */
const CONTROL_ROLES = new Set([
  "button", "link", "textbox", "searchbox", "checkbox", "radio", "combobox", "listbox", "slider", "spinbutton", "switch",
  "tab", "menuitem", "menuitemcheckbox", "menuitemradio", "treeitem", "option",
]);

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

interface AriaNode {
  role?: string;
  name?: string;
  ref?: string;
  box?: Box;
  /** Inside an iframe: the part of the viewport its frames show. */
  clip?: Box;
  children?: (AriaNode | string)[];
}

interface Label {
  ref: string;
  role: string;
  name?: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * Chromium paints only the tab it shows: a capture of another would never answer. The agent's
 * tab list says which one that is (the front tab); the page's own document.visibilityState does
 * not, once Playwright is attached (it reads "visible" for every tab).
 */
function assertShown(tp: TabPage): void {
  if (!tp.tab.active) {
    throw new ApiError("failed", `tab ${tp.tab.id} is not shown, and Chromium draws only the tab it shows: bring it to the front (POST …/pages/{tab}/focus) first`);
  }
}

export async function pageShot(tp: TabPage, q: ShotQuery): Promise<Record<string, unknown>> {
  const format = q.format ?? "png";
  assertShown(tp);
  // Where the page was scrolled and its pixel ratio, for placing the labels on the image.
  const view = q.annotate ? await inWorld<{ sx: number; sy: number; dpr: number; vw: number; vh: number }>(
    tp.page,
    "({ sx: scrollX, sy: scrollY, dpr: devicePixelRatio, vw: innerWidth, vh: innerHeight })",
  ) : undefined;
  const labels = view ? await controlLabels(tp, view, q.full ?? false) : undefined;
  const quality = format === "png" ? undefined : (q.quality ?? DEFAULT_QUALITY);
  let image = await capture(tp, { type: format, quality, fullPage: q.full ?? false });
  let size = imageSize(image);
  if (labels && labels.length) {
    const drawn = await inWorld<{ data: string; width: number; height: number }>(
      tp.page,
      `${DRAW}(${JSON.stringify({ image: image.toString("base64"), mime: `image/${format}`, quality: quality === undefined ? undefined : quality / 100, labels, scale: view!.dpr })})`,
      {},
      true,
    );
    image = Buffer.from(drawn.data, "base64");
    size = { width: drawn.width, height: drawn.height };
  }
  return {
    tab: tp.tab.id,
    format,
    ...size,
    bytes: image.length,
    [`${format}_base64`]: image.toString("base64"),
    ...(labels ? { labels } : {}),
  };
}

/**
 * Playwright's screenshot of the tab. A capture that waits for a frame Chromium never draws (seen
 * once, on the front tab just after it was brought forward) is asked for once more.
 */
async function capture(tp: TabPage, opts: { type: "png" | "jpeg" | "webp"; quality?: number; fullPage: boolean }): Promise<Buffer> {
  for (let attempt = 1; ; attempt++) {
    try {
      // caret: "initial" leaves the page as it is (Playwright would add a style to hide the caret).
      return await tp.page.screenshot({ ...opts, caret: "initial", timeout: SHOT_MS });
    } catch (e) {
      if (tp.page.isClosed()) throw new ApiError("not_found", `tab ${tp.tab.id} closed`);
      const msg = (e as Error).message.split("\n")[0] ?? "";
      if (!/timeout/i.test(msg)) throw new ApiError("failed", `the screenshot failed: ${msg}`);
      if (attempt >= 2) throw new ApiError("timeout", `the page did not draw within ${(2 * SHOT_MS) / 1000} s`);
      log.error(`a screenshot of tab ${tp.tab.id} waited ${SHOT_MS} ms for a frame; asking again`);
    }
  }
}

/** The controls of the page's aria snapshot, in the image's (device) pixels; the page's for `full`. */
async function controlLabels(tp: TabPage, view: { sx: number; sy: number; dpr: number; vw: number; vh: number }, full: boolean): Promise<Label[]> {
  // The refs drawn are handed out like a snapshot's, so an agent can act on what it sees.
  const st = refState(tp.page);
  const gen = st.gen;
  const tree = await ariaTree(tp.page, true, undefined, SHOT_MS).catch((e: Error) => {
    throw new ApiError("failed", `the page's controls could not be read for the labels: ${e.message.split("\n")[0]}`);
  });
  const out: Label[] = [];
  const walk = (n: AriaNode | string) => {
    if (typeof n !== "object" || n === null) return;
    // Boxes are in the page's viewport, an iframe's too (page-element-frames.server.ts); a
    // control its frame does not show (scrolled or clipped out of it) is not labelled.
    if (n.ref && n.role && CONTROL_ROLES.has(n.role) && n.box && n.box.width > 0 && n.box.height > 0 && (!n.clip || overlaps(n.box, n.clip))) {
      const b = n.box;
      const inView = b.x + b.width > 0 && b.y + b.height > 0 && b.x < view.vw && b.y < view.vh;
      if (full || inView) {
        const x = full ? b.x + view.sx : b.x, y = full ? b.y + view.sy : b.y;
        const px = (v: number) => Math.round(v * view.dpr);
        out.push({ ref: n.ref, role: n.role, ...(n.name ? { name: n.name } : {}), x: px(x), y: px(y), width: px(b.width), height: px(b.height) });
      }
    }
    for (const c of n.children ?? []) walk(c);
  };
  for (const n of tree) walk(n);
  issue(st, gen, out.map((l) => l.ref));
  return out;
}

const overlaps = (a: Box, b: Box) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

/** Draws each label's outline and ref on the image, in the page's world; answers the new image. */
const DRAW = String.raw`(async (o) => {
  const bin = atob(o.image), bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const bmp = await createImageBitmap(new Blob([bytes], { type: o.mime }));
  const c = new OffscreenCanvas(bmp.width, bmp.height), g = c.getContext("2d");
  g.drawImage(bmp, 0, 0);
  const s = o.scale, th = Math.round(14 * s);
  g.font = "bold " + Math.round(11 * s) + "px sans-serif";
  g.textBaseline = "top";
  for (const l of o.labels) {
    const x = l.x, y = l.y;
    g.strokeStyle = "rgba(220, 0, 90, 0.9)";
    g.lineWidth = Math.max(1, Math.round(1.5 * s));
    g.strokeRect(x, y, l.width, l.height);
    const tw = g.measureText(l.ref).width + 6 * s, ly = y >= th ? y - th : y;
    g.fillStyle = "rgba(220, 0, 90, 0.9)";
    g.fillRect(x, ly, tw, th);
    g.fillStyle = "#fff";
    g.fillText(l.ref, x + 3 * s, ly + 2 * s);
  }
  const out = new Uint8Array(await (await c.convertToBlob({ type: o.mime, quality: o.quality })).arrayBuffer());
  let b = "";
  for (let i = 0; i < out.length; i += 0x8000) b += String.fromCharCode.apply(null, out.subarray(i, i + 0x8000));
  return { data: btoa(b), width: c.width, height: c.height };
})`;

/** Width and height from a PNG, JPEG or WebP header. */
export function imageSize(b: Buffer): { width: number; height: number } {
  if (b.length > 24 && b.readUInt32BE(0) === 0x89504e47) return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
  if (b.length > 30 && b.toString("ascii", 0, 4) === "RIFF" && b.toString("ascii", 8, 12) === "WEBP") {
    const chunk = b.toString("ascii", 12, 16);
    if (chunk === "VP8 ") return { width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff };
    if (chunk === "VP8L") {
      const bits = b.readUInt32LE(21);
      return { width: (bits & 0x3fff) + 1, height: ((bits >> 14) & 0x3fff) + 1 };
    }
    if (chunk === "VP8X") return { width: b.readUIntLE(24, 3) + 1, height: b.readUIntLE(27, 3) + 1 };
  }
  if (b.length > 4 && b[0] === 0xff && b[1] === 0xd8) {
    // JPEG: walk the segments to the frame header (SOFn, not DHT/JPG/DAC).
    let i = 2;
    while (i + 9 < b.length && b[i] === 0xff) {
      const marker = b[i + 1]!;
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
        return { width: b.readUInt16BE(i + 7), height: b.readUInt16BE(i + 5) };
      }
      i += 2 + b.readUInt16BE(i + 2);
    }
  }
  throw new ApiError("internal", "the browser gave an image whose size could not be read");
}

/**
 * The page as a PDF. With `path`, written into the box (`{path, bytes}`); without, in the answer
 * (`{pdf_base64, bytes}`).
 */
export async function printPdf(actor: Actor, t: ScreenTarget, tp: TabPage, q: PdfQuery): Promise<Record<string, unknown>> {
  let data: string;
  try {
    const printed = cdpSend<{ data: string }>(tp.page, "Page.printToPDF", {
      landscape: q.landscape ?? false,
      printBackground: !(q.no_background ?? false),
      transferMode: "ReturnAsBase64",
    });
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new ApiError("timeout", `the page did not print within ${PDF_MS} ms`)), PDF_MS)));
    data = (await Promise.race([printed, expired]).finally(() => clearTimeout(timer))).data;
  } catch (e) {
    if (e instanceof ApiError) throw e;
    if (tp.page.isClosed()) throw new ApiError("not_found", `tab ${tp.tab.id} closed`);
    const msg = (e as Error).message.split("\n")[0] ?? "";
    // A browser that cannot print (Chromium answers "PrintToPDF is not implemented" where it has
    // no print support) is the seed's "The box or runtime cannot do this".
    if (/not implemented|not supported|not available/i.test(msg)) throw new ApiError("unsupported", `this box's Chromium cannot print to PDF: ${msg}`);
    throw new ApiError("failed", `printing the page failed: ${msg}`);
  }
  const bytes = Math.floor((data.length * 3) / 4) - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0);
  if (q.path === undefined) return { tab: tp.tab.id, pdf_base64: data, bytes };
  const out = await callAgent<{ path: string; bytes: number }>(t.box, agentCall("fileWrite", {}), { path: q.path, contents_base64: data }, 60_000, "bulk");
  await recordFileWritten(actor, t.box.id, out.path, out.bytes);
  return { tab: tp.tab.id, path: out.path, bytes: out.bytes };
}
