import { memo, useEffect, useState } from "react";
import type { BoxJson } from "~/models/box.server";
import { BoxLabels, BoxNameCell } from "./box-meta-edit";
import { removeBoxConfirm, shortId } from "./box-name";
import { BoxThumb } from "./box-thumb";
import type { ConfirmText } from "./confirm-dialog";
import { PostForm } from "./post-form";
import { duration } from "./ui";

// The box list: one row per box with its live thumbnail, name and labels (editable in place),
// state (and start phase), creator, age, expiry and actions. A table from `md` up; below, each
// row is a card (the same markup, restyled, with explicit roles so it still reads as a table),
// so nothing scrolls sideways at 390 px. Rows are memoised: a live push re-renders one row.

export const STATE_STYLE: Record<string, string> = {
  ready: "bg-emerald-100 text-emerald-800",
  starting: "bg-amber-100 text-amber-800",
  paused: "bg-sky-100 text-sky-800",
  stopped: "bg-slate-200 text-slate-700",
  unreachable: "bg-orange-100 text-orange-800",
  failed: "bg-red-100 text-red-800",
  gone: "bg-slate-100 text-slate-700",
};

/** Re-renders every few seconds so ages and deadlines stay true. */
function useNow(everyMs: number) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}

function Act({ box, intent, label, csrf, confirm }: { box: BoxJson; intent: string; label: string; csrf: string; confirm?: ConfirmText }) {
  return (
    <PostForm csrf={csrf} intent={intent} fields={{ id: box.id }} confirm={confirm}>
      <button
        type="submit"
        aria-label={`${label} ${box.id}`}
        className={`rounded-md px-2 py-1 text-xs font-medium ${intent === "remove" ? "text-red-700 hover:bg-red-50" : "text-slate-700 hover:bg-slate-100"}`}
      >
        {label}
      </button>
    </PostForm>
  );
}

/** On a card, the name of a value (the table has column headers for it). */
const CardLabel = ({ children }: { children: string }) => <span className="text-slate-600 md:hidden">{children} </span>;

function StateCell({ box, now }: { box: BoxJson; now: number }) {
  return (
    <div className="flex flex-wrap items-center gap-x-2 gap-y-1">
      <span className={`inline-flex rounded-full px-2 py-0.5 text-xs font-medium ${STATE_STYLE[box.state] ?? ""}`} title={box.reason}>
        {box.state}
      </span>
      {box.state === "starting" ? (
        <span className="text-xs text-slate-700 tabular-nums" data-testid="start-phase">
          {box.start?.phase ? `${box.start.phase} · ` : ""}
          {duration(now - box.created_at_ms)}
        </span>
      ) : null}
      {box.state === "failed" && box.reason ? <span className="w-full text-xs text-red-800 break-words md:max-w-48">{box.reason}</span> : null}
    </div>
  );
}

function createdBy(box: BoxJson): string {
  if (box.created_by) return box.created_by.name;
  return box.owner ? "unknown" : "server token";
}

// On a card (below md) the row is a grid: the thumbnail on the left, the rest stacked beside it.
const TD = "col-start-2 block min-w-0 md:table-cell md:px-4 md:py-3 md:align-top";

const BoxRow = memo(function BoxRow({
  box,
  csrf,
  canDrive,
  now,
  hrefFor,
}: {
  box: BoxJson;
  csrf: string;
  canDrive: boolean;
  now: number;
  hrefFor: (label: string) => string;
}) {
  const by = box.created_by;
  return (
    <tr role="row" data-box-id={box.id} className="grid grid-cols-[7rem_minmax(0,1fr)] gap-x-3 gap-y-1 px-4 py-3 md:table-row md:p-0">
      <td role="cell" className="col-start-1 row-span-6 row-start-1 block md:table-cell md:px-4 md:py-3 md:align-top">
        <a href={`/boxes/${box.id}`} tabIndex={-1} className="block">
          <BoxThumb id={box.id} state={box.state} width={box.width} height={box.height} title={box.name ?? box.id} />
        </a>
      </td>
      <td role="cell" className={`${TD} space-y-1 md:max-w-72`}>
        <BoxNameCell box={box} csrf={csrf} canEdit={canDrive} />
        <div className="font-mono text-xs text-slate-600 break-all">
          {shortId(box.id)} · {box.width}×{box.height}
          {box.screens > 1 ? ` · ${box.screens} screens` : ""}
        </div>
        <BoxLabels box={box} csrf={csrf} canEdit={canDrive} hrefFor={hrefFor} />
      </td>
      <td role="cell" className={TD}>
        <StateCell box={box} now={now} />
      </td>
      <td role="cell" className={`${TD} text-sm text-slate-700 break-words`}>
        <CardLabel>Created by</CardLabel>
        <span data-testid="created-by" title={by ? `${by.kind === "key" ? "API key" : by.kind === "person" ? "person" : "server"} ${by.id}` : undefined}>{createdBy(box)}</span>
        {by?.kind === "key" ? <span className="ml-1 rounded bg-slate-100 px-1 text-xs text-slate-700">key</span> : null}
      </td>
      <td role="cell" className={`${TD} text-sm tabular-nums`}>
        <CardLabel>Age</CardLabel>
        {duration(now - box.created_at_ms)}
      </td>
      <td role="cell" className={`${TD} text-sm tabular-nums`}>
        <CardLabel>Expires in</CardLabel>
        {duration(box.expires_at_ms - now)}
      </td>
      <td role="cell" className={`${TD} col-span-2 col-start-1 md:col-auto`}>
        {canDrive ? (
          <div className="-ml-2 flex flex-wrap gap-1 md:ml-0 md:justify-end">
            {box.state === "ready" ? <Act box={box} intent="pause" label="Pause" csrf={csrf} /> : null}
            {box.state === "paused" || box.state === "stopped" ? <Act box={box} intent="resume" label="Resume" csrf={csrf} /> : null}
            {box.state === "ready" || box.state === "paused" ? <Act box={box} intent="stop" label="Stop" csrf={csrf} /> : null}
            <Act box={box} intent="remove" label="Remove" csrf={csrf} confirm={removeBoxConfirm(box)} />
          </div>
        ) : null}
      </td>
    </tr>
  );
});

const COLUMNS = ["Screen", "Box", "State", "Created by", "Age", "Expires in"];

export function BoxTable({
  boxes,
  csrf,
  canDrive,
  hrefFor,
}: {
  boxes: BoxJson[];
  csrf: string;
  canDrive: boolean;
  hrefFor: (label: string) => string;
}) {
  const now = useNow(5000);
  return (
    <div className="rounded-xl border border-slate-200 bg-white shadow-sm">
      <table role="table" className="block w-full text-sm md:table md:min-w-full md:divide-y md:divide-slate-200">
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
          {boxes.map((box) => (
            <BoxRow key={box.id} box={box} csrf={csrf} canDrive={canDrive} now={now} hrefFor={hrefFor} />
          ))}
        </tbody>
      </table>
    </div>
  );
}
