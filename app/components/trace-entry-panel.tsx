import type { TraceEntry } from "~/models/trace-summary";
import { ActorBadge, clock, describeEntry } from "./trace-describe";

// Under the trace page's frame: the selected entry in full (its whole description, however the
// timeline's row cuts it; "Fork from here" is fork-panel.tsx). Apart from the route so the route
// holds the page's wiring, and this reads as what a person sees of one entry.

export function SelectedEntry({ seq, entry, held }: { seq: number; entry: TraceEntry | undefined; held: boolean }) {
  return (
    <div className="rounded-lg bg-slate-50 p-3 text-sm" data-testid="selected-entry">
      {entry ? (
        <>
          <div className="flex flex-wrap items-center gap-2">
            <span className="font-mono text-xs tabular-nums text-slate-500">#{entry.seq}</span>
            <span className="font-mono text-xs tabular-nums text-slate-500">{clock(entry.at_ms)}</span>
            <ActorBadge actor={entry.actor} name={typeof entry.data?.by_name === "string" ? entry.data.by_name : undefined} />
            <span className="min-w-0 break-words font-medium" data-testid="selected-entry-text">
              {describeEntry(entry)}
            </span>
            {held ? <span className="rounded-full bg-amber-100 px-2 py-0.5 text-xs text-amber-900">a person had the screen</span> : null}
          </div>
          {entry.data ? (
            <details className="mt-2">
              <summary className="cursor-pointer text-xs text-slate-600">What was recorded</summary>
              <pre className="mt-1 max-h-48 overflow-auto rounded bg-slate-900 p-2 text-xs text-slate-100">{JSON.stringify(entry.data, null, 2)}</pre>
            </details>
          ) : null}
        </>
      ) : (
        <span className="text-slate-500">Loading entry {seq}…</span>
      )}
    </div>
  );
}
