// Pointer paths. Pure functions, so a path can be replayed from its seed and tested without X.
export type Motion = "instant" | "smooth" | "human";

export interface Point {
  x: number;
  y: number;
}

export interface PathPlan {
  /** Points to visit after the start, the last one being the target. */
  points: Point[];
  /** Milliseconds to wait after each point (same length as `points`). */
  delays: number[];
}

/** mulberry32: tiny, fast, and good enough for jitter; the same seed gives the same sequence. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function randomSeed(): number {
  return Math.floor(Math.random() * 0x7fffffff);
}

const clamp = (v: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, v));

/** Minimum-jerk easing: slow start, fast middle, slow end, as measured on real hand movements. */
const ease = (t: number): number => t * t * t * (10 - 15 * t + 6 * t * t);

function dedupe(plan: PathPlan, from: Point): PathPlan {
  const points: Point[] = [];
  const delays: number[] = [];
  let prev = from;
  for (let i = 0; i < plan.points.length; i++) {
    const p = plan.points[i];
    const last = i === plan.points.length - 1;
    if (!last && p.x === prev.x && p.y === prev.y) {
      if (delays.length) delays[delays.length - 1] += plan.delays[i];
      continue;
    }
    points.push(p);
    delays.push(plan.delays[i]);
    prev = p;
  }
  return { points, delays };
}

/**
 * Plans the pointer's way from `from` to `to`, clamped to a `width`×`height` screen.
 * instant: one warp. smooth: a straight line, 4 ms between points. human: a bent, eased path
 * with ±1 px jitter and 6–11 ms between points, all drawn from `seed`.
 */
export function planPath(from: Point, to: Point, motion: Motion, seed: number, width: number, height: number): PathPlan {
  const dx = to.x - from.x;
  const dy = to.y - from.y;
  const dist = Math.hypot(dx, dy);
  const fit = (x: number, y: number): Point => ({ x: clamp(Math.round(x), 0, width - 1), y: clamp(Math.round(y), 0, height - 1) });
  if (motion === "instant" || dist < 2) return { points: [fit(to.x, to.y)], delays: [0] };
  if (motion === "smooth") {
    const n = clamp(Math.round(dist / 40), 4, 20);
    const points: Point[] = [];
    const delays: number[] = [];
    for (let i = 1; i <= n; i++) {
      points.push(fit(from.x + (dx * i) / n, from.y + (dy * i) / n));
      delays.push(i === n ? 0 : 4);
    }
    return dedupe({ points, delays }, from);
  }
  const rnd = prng(seed);
  // Two control points pushed sideways by up to a quarter of the distance give one gentle bend.
  const nx = -dy / dist;
  const ny = dx / dist;
  const side = rnd() < 0.5 ? -1 : 1;
  const bend1 = side * (0.05 + rnd() * 0.2) * dist;
  const bend2 = side * (0.02 + rnd() * 0.15) * dist;
  const c1 = { x: from.x + dx * (0.2 + rnd() * 0.2) + nx * bend1, y: from.y + dy * (0.2 + rnd() * 0.2) + ny * bend1 };
  const c2 = { x: from.x + dx * (0.6 + rnd() * 0.2) + nx * bend2, y: from.y + dy * (0.6 + rnd() * 0.2) + ny * bend2 };
  const n = clamp(Math.round(dist / 14), 8, 50);
  const points: Point[] = [];
  const delays: number[] = [];
  for (let i = 1; i <= n; i++) {
    const t = ease(i / n);
    const u = 1 - t;
    const bx = u * u * u * from.x + 3 * u * u * t * c1.x + 3 * u * t * t * c2.x + t * t * t * to.x;
    const by = u * u * u * from.y + 3 * u * u * t * c1.y + 3 * u * t * t * c2.y + t * t * t * to.y;
    const last = i === n;
    const jx = last ? 0 : Math.round(rnd() * 2 - 1);
    const jy = last ? 0 : Math.round(rnd() * 2 - 1);
    points.push(last ? fit(to.x, to.y) : fit(bx + jx, by + jy));
    delays.push(last ? 0 : 6 + Math.floor(rnd() * 6));
  }
  return dedupe({ points, delays }, from);
}
