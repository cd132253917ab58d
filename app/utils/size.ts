// Sizes as people write them ("512m", "2g", "1.5g"): binary units, no unit meaning bytes.

export const SIZE_RE = /^[1-9][0-9]*(\.[0-9]+)?[kKmMgG]?$/;

const UNIT = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 } as const;

/** Bytes in `size`; throws on anything SIZE_RE does not accept. */
export function parseBytes(size: string): number {
  const m = /^([0-9]+(?:\.[0-9]+)?)([kmg]?)$/i.exec(size);
  if (!m || !SIZE_RE.test(size)) throw new Error(`not a size: ${size}`);
  return Math.round(Number(m[1]) * UNIT[m[2]!.toLowerCase() as keyof typeof UNIT]);
}

/** The smallest memory limit a box may get: below it the desktop itself does not fit. */
export const MIN_BOX_MEMORY = "256m";

/** Bytes as people read them: "812 B", "3.4 MiB", "1.8 GiB" (binary units, as sizes are written here). */
export function showBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const [unit, div] = bytes < 1024 ** 2 ? ["KiB", 1024] : bytes < 1024 ** 3 ? ["MiB", 1024 ** 2] : ["GiB", 1024 ** 3];
  return `${(bytes / (div as number)).toFixed(1)} ${unit}`;
}
