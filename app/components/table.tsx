import type { ReactNode } from "react";

// The console's tables: a caption for screen readers, a header row of named columns, rows from
// the page. One place for the markup, so every table reads the same to a screen reader.

const FRAME = "rounded-xl border border-slate-200 bg-white shadow-sm";

/**
 * `cell` styles the header cells (the page styles its own rows alike). `actions` adds a last
 * column for row buttons, named for screen readers only. `framed` draws the table as a card of
 * its own (the box list); otherwise it sits inside a Card.
 */
export function Table({
  caption,
  columns,
  cell,
  actions = false,
  framed = false,
  children,
}: {
  caption: string;
  columns: string[];
  cell: string;
  actions?: boolean;
  framed?: boolean;
  children: ReactNode;
}) {
  return (
    // `relative`: the header's sr-only labels are absolutely placed; without a positioned box here
    // they sit outside the scroller and widen the page on a phone.
    <div className={framed ? `relative overflow-x-auto ${FRAME}` : "relative overflow-x-auto"}>
      <table className={framed ? "min-w-full divide-y divide-slate-200 text-sm" : "min-w-full text-sm"}>
        <caption className="sr-only">{caption}</caption>
        <thead className={`${framed ? "bg-slate-50 font-medium " : ""}text-left text-xs uppercase tracking-wide text-slate-600`}>
          <tr>
            {columns.map((c) => (
              <th key={c} scope="col" className={cell}>
                {c}
              </th>
            ))}
            {actions ? (
              <th scope="col" className={cell}>
                <span className="sr-only">Actions</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-100">{children}</tbody>
      </table>
    </div>
  );
}
