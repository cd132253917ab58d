import { type ReactNode, useEffect, useId, useState } from "react";
import { type ListQuery, SORTS, STATE_ORDER } from "./box-list-query";

// The box list's search, state and label filters and sort. The page keeps them in the URL
// (box-list-query.ts); the search box answers as one types and writes the URL as it goes.

const SELECT = "mt-1 block w-full rounded-md border border-slate-300 bg-white px-2 py-1.5 text-sm";

/** A labelled select whose name is its label alone (not its options' text). */
function Select({ label, value, onChange, children }: { label: string; value: string; onChange: (v: string) => void; children: ReactNode }) {
  const id = useId();
  return (
    <div className="min-w-0 text-sm">
      <label htmlFor={id} className="block font-medium text-slate-700">
        {label}
      </label>
      <select id={id} value={value} onChange={(e) => onChange(e.target.value)} className={SELECT}>
        {children}
      </select>
    </div>
  );
}

export function BoxListControls({
  query,
  labels,
  counts,
  shown,
  total,
  onChange,
}: {
  query: ListQuery;
  labels: string[];
  counts: Record<string, number>;
  shown: number;
  total: number;
  onChange: (q: Partial<ListQuery>) => void;
}) {
  const [q, setQ] = useState(query.q);
  // Back/forward (or a chip's link) changes the URL under the box.
  useEffect(() => setQ(query.q), [query.q]);
  const filtered = query.q !== "" || query.state !== "" || query.label !== "";
  return (
    <div role="search" aria-label="Filter boxes" className="grid grid-cols-3 gap-3 rounded-xl border border-slate-200 bg-white p-4 shadow-sm lg:grid-cols-[2fr_1fr_1fr_1fr_auto]">
      <label className="col-span-3 block text-sm lg:col-span-1">
        <span className="font-medium text-slate-700">Search</span>
        <input
          type="search"
          value={q}
          onChange={(e) => {
            setQ(e.target.value);
            onChange({ q: e.target.value });
          }}
          placeholder="name, id, label or creator"
          className="mt-1 block w-full rounded-md border border-slate-300 px-2 py-1.5 text-sm"
        />
      </label>
      <Select label="State" value={query.state} onChange={(state) => onChange({ state })}>
          <option value="">All states</option>
          {STATE_ORDER.map((s) => (
            <option key={s} value={s}>
              {s} ({counts[s] ?? 0})
            </option>
          ))}
      </Select>
      <Select label="Label" value={query.label} onChange={(label) => onChange({ label })}>
          <option value="">Any label</option>
          {/* A label from a shared link that no box has (any more) stays selectable. */}
          {(query.label && !labels.includes(query.label) ? [query.label, ...labels] : labels).map((l) => (
            <option key={l} value={l}>
              {l}
            </option>
          ))}
      </Select>
      <Select label="Sort" value={query.sort} onChange={(sort) => onChange({ sort: sort as ListQuery["sort"] })}>
          {Object.entries(SORTS).map(([k, v]) => (
            <option key={k} value={k}>
              {v}
            </option>
          ))}
      </Select>
      <div className="col-span-3 flex flex-wrap items-end gap-2 text-sm text-slate-700 lg:col-span-1">
        <span aria-live="polite" className="py-1.5 tabular-nums">
          {filtered ? `${shown} of ${total}` : `${total} box${total === 1 ? "" : "es"}`}
        </span>
        {filtered ? (
          <button type="button" onClick={() => (setQ(""), onChange({ q: "", state: "", label: "" }))} className="rounded-md px-2 py-1.5 font-medium text-indigo-700 hover:bg-indigo-50">
            Clear filters
          </button>
        ) : null}
      </div>
    </div>
  );
}
