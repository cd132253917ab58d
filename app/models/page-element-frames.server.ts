import type { Locator } from "playwright-core";

// Boxes of the nodes inside iframes, moved into the viewport of the page (the README's and seed
// 004's "CSS pixels of the viewport"). Playwright measures each frame's nodes with
// getBoundingClientRect in that frame's own document, so a button 50 px into a frame 400 px into
// the page came out at x 50. Each iframe's node (its ref in the parent document) is asked where
// its content starts (border box plus border and padding) in the parent's viewport, and those
// origins add up through nested frames. A frame's scroll is already in its nodes' boxes. A box is
// where the element is laid out even when its frame clips it (as Playwright's boundingBox says);
// `clip` on such a node is the part of the viewport its frames show, for the screenshot's labels.
// A CSS transform on an iframe (scale, rotate) is not followed.

export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** What these read and set of a snapshot's node (page-element-snap.server.ts's FramedNode). */
interface FramedNode {
  role: string;
  ref?: string;
  box?: Box;
  clip?: Box;
  children?: (FramedNode | string)[];
}

/** How long asking a frame's element where it is may take (the snapshot had it a moment ago). */
const ORIGIN_MS = 2000;

interface Origin {
  x: number;
  y: number;
  /** The frame's visible content box, in its parent's viewport. */
  width: number;
  height: number;
}

/** Where an iframe element's document starts in its own document's viewport, and how big it shows. */
function contentOrigin(el: Element): Origin {
  const r = el.getBoundingClientRect();
  const cs = getComputedStyle(el);
  const padL = Number.parseFloat(cs.paddingLeft) || 0;
  const padT = Number.parseFloat(cs.paddingTop) || 0;
  const padR = Number.parseFloat(cs.paddingRight) || 0;
  const padB = Number.parseFloat(cs.paddingBottom) || 0;
  return { x: r.x + el.clientLeft + padL, y: r.y + el.clientTop + padT, width: el.clientWidth - padL - padR, height: el.clientHeight - padT - padB };
}

const intersect = (a: Box | undefined, b: Box): Box => {
  if (!a) return b;
  const x = Math.max(a.x, b.x), y = Math.max(a.y, b.y);
  return { x, y, width: Math.max(0, Math.min(a.x + a.width, b.x + b.width) - x), height: Math.max(0, Math.min(a.y + a.height, b.y + b.height) - y) };
};

/** Takes every box out of a tree. */
export function dropBoxes(nodes: (FramedNode | string)[]): void {
  for (const n of nodes) {
    if (typeof n === "string") continue;
    delete n.box;
    if (n.children) dropBoxes(n.children);
  }
}

/**
 * Moves every box in `nodes` by (dx, dy) and into the viewport through the iframes among them.
 * `locate` turns a ref of the tree into its element. A frame whose element cannot be asked (it
 * went) loses its nodes' boxes: no box rather than a wrong one.
 */
export async function boxesToViewport(nodes: (FramedNode | string)[], locate: (ref: string) => Locator, dx = 0, dy = 0, clip?: Box): Promise<void> {
  const frames: Promise<void>[] = [];
  const walk = (n: FramedNode | string) => {
    if (typeof n === "string") return;
    if (n.box && (dx || dy)) n.box = { ...n.box, x: n.box.x + dx, y: n.box.y + dy };
    if (clip) n.clip = clip;
    const kids = n.children;
    if (n.role === "iframe" && n.ref && kids?.length) {
      frames.push(
        locate(n.ref)
          .evaluate(contentOrigin, undefined, { timeout: ORIGIN_MS })
          .then(
            (o) => boxesToViewport(kids, locate, dx + o.x, dy + o.y, intersect(clip, { x: dx + o.x, y: dy + o.y, width: o.width, height: o.height })),
            () => dropBoxes(kids),
          ),
      );
      return;
    }
    kids?.forEach(walk);
  };
  nodes.forEach(walk);
  await Promise.all(frames);
}

/**
 * How far an element's frame is from the page's viewport: Playwright's boundingBox (the page's
 * viewport, through every frame) less the element's own client rect. For a snapshot of one
 * element inside an iframe; undefined when the element has no box (hidden) or went.
 */
export async function frameOffsetOf(loc: Locator): Promise<{ x: number; y: number } | undefined> {
  const [bb, r] = await Promise.all([
    loc.boundingBox({ timeout: ORIGIN_MS }).catch(() => null),
    loc
      .evaluate(
        (el) => {
          const b = el.getBoundingClientRect();
          return { x: b.x, y: b.y };
        },
        undefined,
        { timeout: ORIGIN_MS },
      )
      .catch(() => null),
  ]);
  return bb && r ? { x: bb.x - r.x, y: bb.y - r.y } : undefined;
}

/**
 * A snapshot's boxes moved into the page's viewport. One element's tree (`of`) is first moved by
 * its frame's offset when it is not in the page itself (a ref with a frame's prefix, or none to
 * tell by).
 */
export async function treeToViewport(nodes: FramedNode[], locate: (ref: string) => Locator, of?: Locator): Promise<void> {
  if (!of || /^e\d+$/.test(nodes[0]?.ref ?? "")) return boxesToViewport(nodes, locate);
  const off = await frameOffsetOf(of);
  if (off) return boxesToViewport(nodes, locate, off.x, off.y);
  dropBoxes(nodes); // hidden or gone: no box rather than one in its frame's viewport
}
