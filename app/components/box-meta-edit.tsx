import { type MouseEvent, useEffect, useRef, useState } from "react";
import { useFetcher } from "react-router";
import { BOX_LABELS_MAX, BOX_NAME_MAX } from "~/protocol/box-console";
import { type ListBox, labelText, labelsProblem, parseLabelsText } from "./box-list-query";
import { boxTitle } from "./box-name";
import { CsrfInput, usePageWorkspace } from "./ui";

// A box's name and labels in the list, editable in place: the page's action (`rename`,
// `labels`) calls the same model as PATCH /v1/boxes/{id}, so the limits and messages are the
// API's. Sent with a fetcher (the list stays as it is), and the change comes back to every open
// list through the live socket. The editors (and their fetchers) exist only while open, so 80
// rows hydrate as plain text and buttons.

type Answer = { ok?: string; error?: string };

/** Calls `onOk` once the fetcher's answer is a success. */
function useDone(fetcher: ReturnType<typeof useFetcher<Answer>>, onOk: () => void) {
  const sent = useRef(false);
  useEffect(() => {
    if (fetcher.state !== "idle") sent.current = true;
    else if (sent.current) {
      sent.current = false;
      if (fetcher.data?.ok) onOk();
    }
  }, [fetcher.state, fetcher.data, onOk]);
}

/**
 * An in-place editor's open state, and the button that opens it: closing it (Save, Cancel, Done,
 * Escape) gives the focus back to that button, drawn anew, rather than leave it on the page's
 * body where the editor's field was (a keyboard user would start again from the top). Not when
 * the person has moved the focus elsewhere meanwhile (a save that answered late).
 */
export function useEditor() {
  const [editing, setEditing] = useState(false);
  const opener = useRef<HTMLButtonElement>(null);
  const refocus = useRef(false);
  const open = useRef(() => setEditing(true)).current;
  const close = useRef(() => {
    refocus.current = true;
    setEditing(false);
  }).current;
  useEffect(() => {
    if (editing || !refocus.current) return;
    refocus.current = false;
    const at = document.activeElement;
    if (!at || at === document.body) opener.current?.focus();
  }, [editing]);
  return { editing, open, close, opener };
}

/** Whether a box's name and labels may be edited now: not while it starts, nor once it failed. */
export const editable = (box: Pick<ListBox, "state">) => box.state !== "starting" && box.state !== "failed";

const Problem = ({ children }: { children?: string }) =>
  children ? (
    <p role="alert" className="w-full text-xs text-red-700 break-words">
      {children}
    </p>
  ) : null;

export function RenameForm({ box, csrf, close }: { box: ListBox; csrf: string; close: () => void }) {
  const fetcher = useFetcher<Answer>();
  useDone(fetcher, close);
  return (
    <fetcher.Form method="post" className="flex flex-wrap items-center gap-1" onKeyDown={(e) => e.key === "Escape" && close()}>
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
      <button type="button" onClick={close} className="rounded-md px-2 py-1 text-xs font-medium text-slate-700 hover:bg-slate-100">
        Cancel
      </button>
      <Problem>{fetcher.data?.error}</Problem>
    </fetcher.Form>
  );
}

export function BoxNameCell({ box, csrf, canEdit }: { box: ListBox; csrf: string; canEdit: boolean }) {
  const { editing, open, close, opener } = useEditor();
  if (editing) return <RenameForm box={box} csrf={csrf} close={close} />;
  const title = boxTitle(box);
  return (
    <div className="flex min-w-0 items-center gap-1">
      <a className="min-w-0 truncate font-medium text-indigo-700 hover:underline" href={`/boxes/${box.id}`} title={box.name ? box.id : undefined}>
        {title}
      </a>
      {canEdit && editable(box) ? (
        <button
          ref={opener}
          type="button"
          onClick={open}
          aria-label={`Rename ${title}`}
          title="Rename"
          className="box-small-btn"
        >
          ✎
        </button>
      ) : null}
    </div>
  );
}

/** A label: a link to the list filtered by it (a plain click filters in place). */
function Chip({ label, href, onLabel, onRemove, title }: { label: string; href: string; onLabel: (l: string) => void; onRemove?: () => void; title: string }) {
  const filter = (e: MouseEvent<HTMLAnchorElement>) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    onLabel(label);
  };
  return (
    <span className="box-chip">
      <a href={href} onClick={filter} className="truncate px-2 py-0.5 hover:underline" title={`Show boxes labelled ${label}`}>
        {label}
      </a>
      {onRemove ? (
        <button type="button" onClick={onRemove} aria-label={`Remove label ${label} from ${title}`} className="rounded-full pr-1.5 pl-0.5 hover:text-red-700">
          ×
        </button>
      ) : null}
    </span>
  );
}

type LabelsProps = { box: ListBox; csrf: string; hrefFor: (label: string) => string; onLabel: (label: string) => void };

function LabelsEditor({ box, csrf, hrefFor, onLabel, close }: LabelsProps & { close: () => void }) {
  const fetcher = useFetcher<Answer>();
  const pageWorkspace = usePageWorkspace() ?? "";
  const [adding, setAdding] = useState("");
  const [local, setLocal] = useState<string>();
  const cleared = useRef(() => setAdding("")).current;
  useDone(fetcher, cleared);
  const title = boxTitle(box);
  const entries = Object.entries(box.labels);
  const save = (labels: Record<string, string>) =>
    fetcher.submit({ intent: "labels", id: box.id, csrf, page_workspace: pageWorkspace, labels: JSON.stringify(labels) }, { method: "post" });
  const add = () => {
    const parsed = parseLabelsText(adding);
    if (!parsed || Object.keys(parsed).length === 0) return setLocal("write key=value (or several, separated by commas)");
    const problem = labelsProblem(adding);
    if (problem) return setLocal(problem);
    setLocal(undefined);
    save({ ...box.labels, ...parsed });
  };
  return (
    <div className="flex flex-wrap items-center gap-1">
      {entries.map(([k, v]) => (
        <Chip key={k} label={labelText(k, v)} href={hrefFor(labelText(k, v))} onLabel={onLabel} title={title} onRemove={() => save(Object.fromEntries(entries.filter(([key]) => key !== k)))} />
      ))}
      <span className="flex w-full flex-wrap items-center gap-1">
        <input
          value={adding}
          onChange={(e) => setAdding(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter") {
              e.preventDefault();
              add();
            } else if (e.key === "Escape") close();
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
        <button type="button" onClick={close} className="rounded-md px-2 py-0.5 text-xs font-medium text-slate-700 hover:bg-slate-100">
          Done
        </button>
      </span>
      <Problem>{local ?? fetcher.data?.error}</Problem>
    </div>
  );
}

export function BoxLabels({ box, csrf, canEdit, hrefFor, onLabel }: LabelsProps & { canEdit: boolean }) {
  const { editing, open, close, opener } = useEditor();
  if (editing) return <LabelsEditor box={box} csrf={csrf} hrefFor={hrefFor} onLabel={onLabel} close={close} />;
  const title = boxTitle(box);
  const entries = Object.entries(box.labels);
  if (entries.length === 0 && !(canEdit && editable(box))) return null;
  return (
    <div className="flex flex-wrap items-center gap-1">
      {entries.map(([k, v]) => (
        <Chip key={k} label={labelText(k, v)} href={hrefFor(labelText(k, v))} onLabel={onLabel} title={title} />
      ))}
      {canEdit && editable(box) ? (
        // The accessible name starts with the visible words (WCAG 2.5.3), then names the box.
        <button ref={opener} type="button" onClick={open} aria-label={entries.length ? `Edit labels of ${title}` : `Add labels to ${title}`} className="box-small-btn">
          {entries.length ? "Edit labels" : "Add labels"}
        </button>
      ) : null}
    </div>
  );
}
