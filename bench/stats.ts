/** Median and p95 of samples, printed the same way by every bench. */
export function summarize(name: string, samples: number[], unit = "ms") {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
  const median = s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  const p95 = at(0.95);
  console.log(
    `${name.padEnd(48)} n=${String(s.length).padStart(4)}  median ${median.toFixed(2).padStart(9)} ${unit}  p95 ${p95.toFixed(2).padStart(9)} ${unit}`,
  );
  return { median, p95 };
}

export const now = () => performance.now();
