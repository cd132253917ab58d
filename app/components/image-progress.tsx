import type { BuildProgress } from "~/models/image.server";

/** "Step 3/9 : RUN …" → 3 of 9; the engine's classic builder numbers its steps so. */
export function stepOf(step: string | undefined): { n: number; total: number } | undefined {
  const m = step ? /^Step (\d+)\/(\d+)/.exec(step) : null;
  return m ? { n: Number(m[1]), total: Number(m[2]) } : undefined;
}

/**
 * A build under way: a progress bar from the build's step (indeterminate before the first step:
 * the base image's debootstrap has none), the step's words, and the tail of its log.
 */
export function ImageProgress({ label, progress }: { label: string; progress: BuildProgress | undefined }) {
  const at = stepOf(progress?.step);
  const log = progress?.log.slice(-8) ?? [];
  return (
    <div className="mt-2 space-y-2">
      <progress
        className="h-2 w-full"
        aria-label={`Building ${label}`}
        max={at?.total}
        value={at ? at.n - 1 : undefined}
      />
      <p className="break-all text-xs text-slate-600" data-testid="build-step">
        {progress?.step ?? "preparing the build"}
      </p>
      {log.length ? (
        <pre aria-label={`Build log of ${label}`} className="max-h-40 overflow-auto whitespace-pre-wrap break-all rounded-md bg-slate-900 p-2 font-mono text-xs text-slate-100">
          {log.join("\n")}
        </pre>
      ) : null}
    </div>
  );
}
