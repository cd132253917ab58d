import { type FormEvent, memo, startTransition, useEffect, useState } from "react";
import { useFormAction, useSubmit } from "react-router";
import type { ListBox } from "./box-list-query";
import { StartProgress } from "./start-progress";
import { BoxLabels, BoxNameCell } from "./box-meta-edit";
import { removeBoxConfirm, shortId } from "./box-name";
import { BoxThumb } from "./box-thumb";
import { ConfirmDialog } from "./confirm-dialog";
import { CsrfInput, duration } from "./ui";

// The box list: one row per box with its live thumbnail, name and labels (editable in place),
// state (and start phase), creator, age, expiry and actions. A table from `md` up; below, each
// row is a card (the same markup, restyled in app.css, with explicit roles so it still reads as a
// table), so nothing scrolls sideways at 390 px. Built to stay light with 80 rows: rows are
// memoised (a live push re-renders one), each row's actions are one plain form, and the table
// submits them and asks before a removal with one handler and one dialog.

export const STATE_STYLE: Record<string, string> = {
  ready: "bg-emerald-100 text-emerald-800",
  starting: "bg-amber-100 text-amber-800",
  paused: "bg-sky-100 text-sky-800",
  stopped: "bg-slate-200 text-slate-700",
  unreachable: "bg-orange-100 text-orange-800",
  failed: "bg-red-100 text-red-800",
  gone: "bg-slate-100 text-slate-700",
};

/**
 * Re-renders every few seconds so ages and deadlines stay true. It starts from the server's clock
 * (`serverNow`, when the page was rendered), so hydration renders the very text the server sent
 * (a mismatch would make React render the whole list again), and moves to the browser's at once.
 */
function useNow(everyMs: number, serverNow: number) {
  const [now, setNow] = useState(serverNow);
  useEffect(() => {
    setNow(Date.now());
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}

/** Pause, resume, stop and remove: one plain form (the button sends its intent); BoxTable submits it. */
function RowActions({ box, csrf, action }: { box: ListBox; csrf: string; action: string }) {
  const acts = [
    box.state === "ready" && ["pause", "Pause"],
    (box.state === "paused" || box.state === "stopped") && ["resume", "Resume"],
    (box.state === "ready" || box.state === "paused") && ["stop", "Stop"],
  ].filter((a): a is [string, string] => Boolean(a));
  return (
    <form method="post" action={action} data-box-actions="" className="-ml-2 flex flex-wrap gap-1 md:ml-0 md:justify-end">
      {/* With page_workspace: a stale tab's buttons act in the workspace its list shows. */}
      <CsrfInput token={csrf} />
      <input type="hidden" name="id" value={box.id} />
      {acts.map(([intent, label]) => (
        <button key={intent} type="submit" name="intent" value={intent} aria-label={`${label} ${box.id}`} className="box-act">
          {label}
        </button>
      ))}
      <button type="submit" name="intent" value="remove" aria-label={`Remove ${box.id}`} className="box-act text-red-700 hover:bg-red-50">
        Remove
      </button>
    </form>
  );
}

function StateCell({ box, now }: { box: ListBox; now: number }) {
  return (
    <div className="flex flex-wrap items-center gap-x-2 gap-y-1">
      <span className={`inline-flex rounded-full px-2 py-0.5 text-xs font-medium ${STATE_STYLE[box.state] ?? ""}`} title={box.reason}>
        {box.state}
      </span>
      {box.state === "starting" ? (
        <span className="w-full" data-testid="start-phase">
          <StartProgress start={box.start && { ...box.start, log: [] }} createdAt={box.created_at_ms} now={now} />
        </span>
      ) : null}
      {box.state === "failed" && box.reason ? <span className="w-full text-xs text-red-800 break-words md:max-w-48">{box.reason}</span> : null}
    </div>
  );
}

function createdBy(box: ListBox): string {
  if (box.created_by) return box.created_by.name;
  return box.owner ? "unknown" : "server token";
}

/** The creator's tooltip: what it is and its id (without the issuer's `key:`/`user:` prefix). */
function creatorTip(by: NonNullable<ListBox["created_by"]>): string {
  const id = by.id.replace(/^[a-z]+:/, "");
  return by.kind === "key" ? `API key “${by.name}” (${id})` : by.kind === "person" ? `${by.name} (${id})` : by.name;
}

const BoxRow = memo(function BoxRow({
  box,
  csrf,
  canDrive,
  now,
  action,
  hrefFor,
  onLabel,
}: {
  box: ListBox;
  csrf: string;
  canDrive: boolean;
  now: number;
  action: string;
  hrefFor: (label: string) => string;
  onLabel: (label: string) => void;
}) {
  const by = box.created_by;
  return (
    <tr role="row" data-box-id={box.id} className="box-row">
      <td role="cell" className="box-shot">
        <a href={`/boxes/${box.id}`} tabIndex={-1} className="block">
          <BoxThumb id={box.id} state={box.state} width={box.width} height={box.height} title={box.name ?? box.id} />
        </a>
      </td>
      <td role="cell" className="space-y-1 md:max-w-72">
        <BoxNameCell box={box} csrf={csrf} canEdit={canDrive} />
        <div className="font-mono text-xs text-slate-600 break-all">
          {`${shortId(box.id)} · ${box.width}×${box.height}${box.screens > 1 ? ` · ${box.screens} screens` : ""}`}
        </div>
        <BoxLabels box={box} csrf={csrf} canEdit={canDrive} hrefFor={hrefFor} onLabel={onLabel} />
      </td>
      <td role="cell">
        <StateCell box={box} now={now} />
      </td>
      <td role="cell" className="text-slate-700 break-words">
        <span className="card-label">Created by </span>
        <span data-testid="created-by" title={by ? creatorTip(by) : undefined}>
          {createdBy(box)}
        </span>
        {/* The badge is for the eye; a screen reader hears "ci agent (API key)", not "ci agentkey". */}
        {by?.kind === "key" ? (
          <>
            <span aria-hidden className="ml-1 rounded bg-slate-100 px-1 text-xs text-slate-700">key</span>
            <span className="sr-only"> (API key)</span>
          </>
        ) : null}
      </td>
      <td role="cell" className="tabular-nums">
        <span className="card-label">Age </span>
        {duration(now - box.created_at_ms)}
      </td>
      <td role="cell" className="tabular-nums">
        <span className="card-label">Expires in </span>
        {duration(box.expires_at_ms - now)}
      </td>
      <td role="cell" className="box-acts">
        {canDrive ? <RowActions box={box} csrf={csrf} action={action} /> : null}
      </td>
    </tr>
  );
});

const COLUMNS = ["Screen", "Box", "State", "Created by", "Age", "Expires in"];

/**
 * Rows the server renders and the page hydrates first: more than a tall screen shows. The rest
 * render right after, in a transition (the page answers input meanwhile), so a long list costs
 * its first paint and hydration no more than a screenful.
 */
export const FIRST_ROWS = 16;

/** How many rows to render: FIRST_ROWS until the page has hydrated, then all. */
function useRowLimit(): number {
  const [limit, setLimit] = useState(FIRST_ROWS);
  useEffect(() => startTransition(() => setLimit(Number.POSITIVE_INFINITY)), []);
  useEffect(() => {
    // For bench/box-list.ts: every row is on the page.
    if (limit === Number.POSITIVE_INFINITY) performance.mark("holm:box-list:all-rows");
  }, [limit]);
  return limit;
}

export function BoxTable({
  boxes,
  csrf,
  canDrive,
  hrefFor,
  onLabel,
  serverNow,
}: {
  boxes: ListBox[];
  csrf: string;
  canDrive: boolean;
  hrefFor: (label: string) => string;
  onLabel: (label: string) => void;
  serverNow: number;
}) {
  const now = useNow(5000, serverNow);
  const limit = useRowLimit();
  // The page's own action URL (with `?index` and the list's query), for the rows' forms.
  const action = useFormAction();
  const submit = useSubmit();
  const [removing, setRemoving] = useState<{ button: HTMLButtonElement; box: ListBox }>();
  const onSubmit = (e: FormEvent<HTMLTableElement>) => {
    const form = e.target as HTMLFormElement;
    if (e.defaultPrevented || !("boxActions" in form.dataset)) return;
    e.preventDefault();
    const button = (e.nativeEvent as SubmitEvent).submitter as HTMLButtonElement | null;
    if (!button) return;
    if (button.value === "remove") {
      const box = boxes.find((b) => b.id === (form.elements.namedItem("id") as HTMLInputElement).value);
      if (box) setRemoving({ button, box });
      return;
    }
    void submit(button);
  };
  return (
    <div className="rounded-xl border border-slate-200 bg-white shadow-sm">
      <table role="table" onSubmit={onSubmit} className="block w-full text-sm md:table md:min-w-full md:divide-y md:divide-slate-200">
        <caption className="sr-only">Boxes</caption>
        <thead className="sr-only bg-slate-50 text-left text-xs font-medium tracking-wide text-slate-600 uppercase md:not-sr-only md:table-header-group">
          <tr role="row">
            {COLUMNS.map((c) => (
              <th key={c} role="columnheader" scope="col" className="px-4 py-3">
                {c}
              </th>
            ))}
            <th role="columnheader" scope="col" className="px-4 py-3">
              <span className="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody role="rowgroup" className="block divide-y divide-slate-100 md:table-row-group">
          {(boxes.length > limit ? boxes.slice(0, limit) : boxes).map((box) => (
            <BoxRow key={box.id} box={box} csrf={csrf} canDrive={canDrive} now={now} action={action} hrefFor={hrefFor} onLabel={onLabel} />
          ))}
        </tbody>
      </table>
      <ConfirmDialog
        open={removing !== undefined}
        text={removing ? removeBoxConfirm(removing.box) : { title: "", action: "" }}
        onCancel={() => setRemoving(undefined)}
        onConfirm={() => {
          if (removing) void submit(removing.button);
          setRemoving(undefined);
        }}
      />
    </div>
  );
}
