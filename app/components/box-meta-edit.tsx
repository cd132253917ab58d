import { useEffect, useRef, useState } from "react";
import { Link, useFetcher } from "react-router";
import type { BoxJson } from "~/models/box.server";
import { BOX_LABELS_MAX, BOX_NAME_MAX } from "~/protocol/box-console";
import { labelText, parseLabelsText } from "./box-list-query";
import { boxTitle } from "./box-name";
import { CsrfInput } from "./ui";

// A box's name and labels in the list, editable in place: the page's action (`rename`,
// `labels`) calls the same model as PATCH /v1/boxes/{id}, so the limits and messages are the
// API's. Sent with a fetcher (the list stays as it is), and the change comes back to every open
// list through the live socket.

type Answer = { ok?: string; error?: string };

/** Closes the editor once the fetcher's answer is a success. */
function useDone(fetcher: ReturnType<typeof useFetcher<Answer>>, close: () => void) {
  const sent = useRef(false);
  useEffect(() => {
    if (fetcher.state !== "idle") sent.current = true;
    else if (sent.current) {
      sent.current = false;
      if (fetcher.data?.ok) close();
    }
  }, [fetcher.state, fetcher.data, close]);
}

const editable = (box: BoxJson) => box.state !== "starting" && box.state !== "failed";

export function BoxNameCell({ box, csrf, canEdit }: { box: BoxJson; csrf: string; canEdit: boolean }) {
  const fetcher = useFetcher<Answer>();
  const [editing, setEditing] = useState(false);
  const close = useRef(() => setEditing(false)).current;
  useDone(fetcher, close);
  const title = boxTitle(box);
  if (editing) {
    return (
      <fetcher.Form method="post" className="flex flex-wrap items-center gap-1" onKeyDown={(e) => e.key === "Escape" && setEditing(false)}>
        <CsrfInput token={csrf} />
        <input type="hidden" name="intent" value="rename" />
        <input type="hidden" name="id" value={box.id} />
        <input
          name="name"
          aria-label={`Name of ${box.id}`}
          defaultValue={box.name ?? ""}
          placeholder="a name (empty: none)"
          maxLength={BOX_NAME_MAX}
          autoFocus
          className="min-w-0 flex-1 rounded-md border border-slate-300 px-2 py-1 text-sm"
        />
        <button type="submit" disabled={fetcher.state !== "idle"} className="rounded-md bg-indigo-600 px-2 py-1 text-xs font-medium text-white hover:bg-indigo-500">
          Save
        </button>
        <button type="button" onClick={() => setEditing(false)} className="rounded-md px-2 py-1 text-xs font-medium text-slate-700 hover:bg-slate-100">
          Cancel
        </button>
        {fetcher.data?.error ? (
          <p role="alert" className="w-full text-xs text-red-700 break-words">
            {fetcher.data.error}
          </p>
        ) : null}
      </fetcher.Form>
    );
  }
  return (
    <div className="flex min-w-0 items-center gap-1">
      <a className="min-w-0 truncate font-medium text-indigo-700 hover:underline" href={`/boxes/${box.id}`} title={box.name ? box.id : undefined}>
        {title}
      </a>
      {canEdit && editable(box) ? (
        <button
          type="button"
          onClick={() => setEditing(true)}
          aria-label={`Rename ${title}`}
          title="Rename"
          className="shrink-0 rounded px-1 text-xs text-slate-600 hover:bg-slate-100 hover:text-slate-900"
        >
          ✎
        </button>
      ) : null}
    </div>
  );
}

function Chip({ label, href, onRemove, title }: { label: string; href: string; onRemove?: () => void; title: string }) {
  return (
    <span className="inline-flex max-w-full items-center rounded-full bg-indigo-50 text-xs text-indigo-800 ring-1 ring-indigo-200">
      <Link to={href} replace className="truncate px-2 py-0.5 hover:underline" title={`Show boxes labelled ${label}`}>
        {label}
      </Link>
      {onRemove ? (
        <button type="button" onClick={onRemove} aria-label={`Remove label ${label} from ${title}`} className="rounded-full pr-1.5 pl-0.5 hover:text-red-700">
          ×
        </button>
      ) : null}
    </span>
  );
}

export function BoxLabels({ box, csrf, canEdit, hrefFor }: { box: BoxJson; csrf: string; canEdit: boolean; hrefFor: (label: string) => string }) {
  const fetcher = useFetcher<Answer>();
  const [editing, setEditing] = useState(false);
  const [adding, setAdding] = useState("");
  const [local, setLocal] = useState<string>();
  const close = useRef(() => setAdding("")).current;
  useDone(fetcher, close);
  const title = boxTitle(box);
  const entries = Object.entries(box.labels);
  const save = (labels: Record<string, string>) =>
    fetcher.submit({ intent: "labels", id: box.id, csrf, labels: JSON.stringify(labels) }, { method: "post" });
  const add = () => {
    const parsed = parseLabelsText(adding);
    if (!parsed || Object.keys(parsed).length === 0) return setLocal("write key=value (or several, separated by commas)");
    setLocal(undefined);
    save({ ...box.labels, ...parsed });
  };
  const error = local ?? fetcher.data?.error;
  return (
    <div className="flex flex-wrap items-center gap-1">
      {entries.map(([k, v]) => (
        <Chip
          key={k}
          label={labelText(k, v)}
          href={hrefFor(labelText(k, v))}
          title={title}
          onRemove={editing ? () => save(Object.fromEntries(entries.filter(([key]) => key !== k))) : undefined}
        />
      ))}
      {canEdit && editable(box) && !editing ? (
        <button type="button" onClick={() => setEditing(true)} aria-label={`Edit labels of ${title}`} className="rounded px-1 text-xs text-slate-600 hover:bg-slate-100 hover:text-slate-900">
          {entries.length ? "Edit labels" : "+ label"}
        </button>
      ) : null}
      {editing ? (
        <span className="flex w-full flex-wrap items-center gap-1">
          <input
            value={adding}
            onChange={(e) => setAdding(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === "Enter") {
                e.preventDefault();
                add();
              } else if (e.key === "Escape") setEditing(false);
            }}
            aria-label={`New label for ${title}`}
            placeholder="key=value"
            disabled={entries.length >= BOX_LABELS_MAX}
            autoFocus
            className="min-w-0 flex-1 rounded-md border border-slate-300 px-2 py-0.5 text-xs"
          />
          <button type="button" onClick={add} disabled={fetcher.state !== "idle"} className="rounded-md px-2 py-0.5 text-xs font-medium text-indigo-700 ring-1 ring-indigo-200 hover:bg-indigo-50">
            Add
          </button>
          <button type="button" onClick={() => (setEditing(false), setLocal(undefined))} className="rounded-md px-2 py-0.5 text-xs font-medium text-slate-700 hover:bg-slate-100">
            Done
          </button>
        </span>
      ) : null}
      {error ? (
        <p role="alert" className="w-full text-xs text-red-700 break-words">
          {error}
        </p>
      ) : null}
    </div>
  );
}
