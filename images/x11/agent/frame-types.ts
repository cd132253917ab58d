// What a frame request asks and answers, on X11 (frames.ts) and Wayland (wayland-views.ts) alike.

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface CaptureOptions {
  window?: string;
  region?: Rect;
  /** Percent of full size, 1–400. */
  scale?: number;
  /** Draw the pointer into the image (Xvfb's GetImage leaves it out). */
  pointer?: boolean;
}

export interface Frame {
  hash: string;
  unchanged: boolean;
  png_base64?: string;
  width: number;
  height: number;
}
