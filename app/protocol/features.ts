// The desktop features a spec may list (seed 000, `spec.desktop.features`): part of the API, so
// the console's launch form, the spec model and the image builder read them from here.

export const FEATURES = ["wide_fonts", "video", "dock", "accessibility", "audio", "x11_apps"] as const;
export type Feature = (typeof FEATURES)[number];
