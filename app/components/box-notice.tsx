import type { ReactNode } from "react";
import { Link } from "react-router";
import { Shell } from "./shell";

// A box page that shows a notice instead of the box: the box was removed, or the page names a
// desktop of the box that is no longer there (a stopped box resumed with a new one).

export function BoxNotice({
  id,
  title,
  children,
  links,
}: {
  id: string;
  title: string;
  children: ReactNode;
  /** The first link is the main way on. */
  links: { to: string; label: string }[];
}) {
  return (
    <Shell>
      <nav aria-label="Breadcrumb" className="text-sm text-slate-600">
        <Link to="/" className="hover:underline">Boxes</Link> / <span className="font-mono">{id.slice(0, 16)}…</span>
      </nav>
      <section data-testid="box-notice" className="mt-6 rounded-xl border border-slate-200 bg-white p-8 text-center shadow-sm">
        <h1 className="text-xl font-semibold">{title}</h1>
        <div className="mt-2 space-y-1 text-sm text-slate-600">{children}</div>
        <div className="mt-5 flex justify-center gap-3">
          {links.map((l, i) => (
            <Link
              key={l.to}
              to={l.to}
              className={
                i === 0
                  ? "rounded-md bg-indigo-600 px-3 py-1.5 text-sm font-medium text-white hover:bg-indigo-500"
                  : "rounded-md px-3 py-1.5 text-sm font-medium text-slate-700 ring-1 ring-slate-300 hover:bg-slate-50"
              }
            >
              {l.label}
            </Link>
          ))}
        </div>
      </section>
    </Shell>
  );
}
