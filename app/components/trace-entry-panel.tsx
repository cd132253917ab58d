import { Link, useFetcher } from "react-router";
import type { TraceEntry } from "~/models/trace-summary";
import { ActorBadge, clock, describeEntry } from "./trace-describe";
import { Alert, Button, CsrfInput } from "./ui";

// Under the trace page's frame: the selected entry in full, and "Fork from here". Apart from the
// route so the route holds the page's wiring, and these two read as what a person sees of one
// entry.

const fmt = (n: number) => n.toLocaleString("en-US");

/** What the trace route's action answers to a fork (formAction turns a refusal into `error`). */
export type ForkResult = { forked: { id: string; up_to: number } } | { error: string };

export function SelectedEntry({ seq, entry, held }: { seq: number; entry: TraceEntry | undefined; held: boolean }) {
  return (
    <div className="rounded-lg bg-slate-50 p-3 text-sm" data-testid="selected-entry">
      {entry ? (
        <>
          <div className="flex flex-wrap items-center gap-2">
            <span className="font-mono text-xs tabular-nums text-slate-500">#{entry.seq}</span>
            <span className="font-mono text-xs tabular-nums text-slate-500">{clock(entry.at_ms)}</span>
            <ActorBadge actor={entry.actor} />
            <span className="min-w-0 font-medium">{describeEntry(entry)}</span>
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

/** Posts `intent=fork` with the selected entry to the page's own action. */
export function ForkForm({ seq, csrf }: { seq: number; csrf: string }) {
  const fetcher = useFetcher<ForkResult>();
  const result = fetcher.data;
  const busy = fetcher.state !== "idle";
  return (
    <div className="space-y-2 border-t border-slate-100 pt-4">
      <fetcher.Form method="post" className="flex flex-wrap items-center gap-3">
        <CsrfInput token={csrf} />
        <input type="hidden" name="intent" value="fork" />
        <input type="hidden" name="seq" value={seq} />
        <Button type="submit" disabled={busy}>
          {busy ? "Forking…" : "Fork from here"}
        </Button>
        <span className="text-xs text-slate-600">A new box that does the recorded steps again, up to entry {fmt(seq)}.</span>
      </fetcher.Form>
      {result && "error" in result ? <Alert>{result.error}</Alert> : null}
      {result && "forked" in result ? (
        <Alert tone="success">
          Forked up to entry {fmt(result.forked.up_to)}:{" "}
          <Link to={`/boxes/${result.forked.id}`} className="font-mono font-medium underline" data-testid="fork-link">
            {result.forked.id}
          </Link>{" "}
          starts and replays the steps.
        </Alert>
      ) : null}
    </div>
  );
}
