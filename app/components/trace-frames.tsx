import { type Ref, useEffect, useImperativeHandle, useLayoutEffect, useRef, useState } from "react";
import { type FrameCache, THUMB_WIDTH } from "./frame-cache";

// The views of a trace's frames: the large frame and the filmstrip's thumbnails, each a canvas
// drawn from the frame cache (frame-cache.ts) once per animation frame. The shown frame can follow
// a slider at display rate because drawing a decoded bitmap costs a millisecond or two, and the
// slider drives the canvas directly, not through a React render.

export interface FrameHandle {
  /** Shows this frame as soon as it is decoded (undefined: no frame yet at this entry). */
  show(hash: string | undefined): void;
}

/**
 * The large frame: a canvas that draws the wanted frame as soon as it is decoded, at most once per
 * animation frame. Driven through `handle.show`, so a slider can move it without a React render.
 * `data-frame` is the hash drawn, `data-want` the hash asked for.
 */
export function FrameView({
  cache,
  handle,
  initial,
  width,
  height,
  label,
}: {
  cache: FrameCache | undefined;
  handle: Ref<FrameHandle>;
  initial: string | undefined;
  width: number;
  height: number;
  label: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
  const want = useRef(initial);
  const shown = useRef<string | undefined>(undefined);
  const raf = useRef(0);
  // What covers the canvas: nothing once a frame is drawn (a frame still loading keeps the last
  // one up). Set only when it changes, so scrubbing does not re-render this component.
  type Cover = "none" | "empty" | "loading" | "missing";
  const [cover, setCoverState] = useState<Cover>(initial ? "loading" : "empty");
  const coverRef = useRef<Cover>(cover);
  const setCover = (c: Cover) => {
    if (coverRef.current === c) return;
    coverRef.current = c;
    setCoverState(c);
  };
  // Rendered once; from then on `show` keeps data-want (a re-render must not put an older one back).
  const [initialWant] = useState(initial ?? "");

  const draw = useRef(() => {});
  draw.current = () => {
    raf.current = 0;
    const el = canvas.current;
    if (!el) return;
    const h = want.current;
    if (!h) {
      el.getContext("2d")?.clearRect(0, 0, el.width, el.height);
      shown.current = undefined;
      el.dataset.frame = "";
      return setCover("empty");
    }
    if (h === shown.current) return setCover("none");
    const bmp = cache?.bitmap(h);
    if (!bmp) {
      if (cache?.failure(h) === 404) return setCover("missing");
      return setCover(shown.current ? "none" : "loading");
    }
    if (el.width !== bmp.width || el.height !== bmp.height) {
      el.width = bmp.width;
      el.height = bmp.height;
    }
    el.getContext("2d", { alpha: false })?.drawImage(bmp, 0, 0);
    shown.current = h;
    el.dataset.frame = h;
    setCover("none");
  };
  const schedule = () => {
    if (!raf.current) raf.current = requestAnimationFrame(() => draw.current());
  };

  useImperativeHandle(
    handle,
    () => ({
      show(h) {
        want.current = h;
        if (canvas.current) canvas.current.dataset.want = h ?? "";
        schedule();
      },
    }),
    [],
  );

  useEffect(() => {
    if (!cache) return;
    schedule();
    const off = cache.subscribe((h) => {
      if (h === want.current) schedule();
    });
    return () => {
      off();
      cancelAnimationFrame(raf.current);
      raf.current = 0;
    };
  }, [cache]);

  // Frames are decoded at the size the canvas is shown, in device pixels.
  useEffect(() => {
    const el = box.current;
    if (!cache || !el) return;
    const fit = () => cache.setDecodeSize(Math.min(width, Math.ceil((el.clientWidth * (window.devicePixelRatio || 1)) / 64) * 64), height / width);
    fit();
    const ro = new ResizeObserver(fit);
    ro.observe(el);
    return () => ro.disconnect();
  }, [cache, width, height]);

  return (
    <div ref={box} className="relative overflow-hidden rounded-lg bg-slate-900" style={{ aspectRatio: `${width} / ${height}` }}>
      <canvas
        ref={canvas}
        width={width}
        height={height}
        role="img"
        aria-label={label}
        data-testid="trace-frame"
        data-want={initialWant}
        className="block h-full w-full"
      />
      {cover !== "none" ? (
        <div className="pointer-events-none absolute inset-0 flex items-center justify-center bg-slate-900 p-4 text-center text-sm text-slate-300">
          {cover === "empty"
            ? "No frame yet at this entry: the screen had not been captured."
            : cover === "missing"
              ? "This frame is no longer stored."
              : "Loading the frame…"}
        </div>
      ) : null}
    </div>
  );
}

/** A filmstrip thumbnail, drawn from the cache once its frame is decoded (no React render). */
export function ThumbCanvas({ cache, hash }: { cache: FrameCache | undefined; hash: string }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  useLayoutEffect(() => {
    const paint = () => {
      const el = canvas.current;
      const bmp = cache?.thumb(hash);
      if (!el || !bmp) return false;
      el.width = bmp.width;
      el.height = bmp.height;
      el.getContext("2d")?.drawImage(bmp, 0, 0);
      return true;
    };
    if (!cache || paint()) return;
    const off = cache.subscribe((h) => {
      if (h === hash && paint()) off();
    });
    return off;
  }, [cache, hash]);
  return <canvas ref={canvas} width={THUMB_WIDTH} height={100} aria-hidden className="block h-full w-full bg-slate-800 object-contain" />;
}
