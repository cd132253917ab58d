import { type KeyboardEvent, useEffect, useId, useRef, useState } from "react";
import { Form, Link } from "react-router";
import { CsrfInput } from "./ui";

// The header's workspace switcher: a disclosure button naming the current workspace that opens a
// list of the person's workspaces, each a button of one switch form, and "New workspace…".
// Switching changes the session's current workspace, which every tab shares, so only pressing a
// workspace switches: moving through the list with Tab or the arrow keys never does (a <select>
// that submitted on change switched on every arrow key, WCAG 3.2.2). Without JavaScript the list
// is shown as it is, in <noscript>, and the button that needs a script to open is hidden.

type Workspace = { id: string; name: string; role: string };

export function WorkspaceSwitcher({ workspaces, current, csrf }: { workspaces: readonly Workspace[]; current: Workspace | null; csrf: string }) {
  const [open, setOpen] = useState(false);
  const toggle = useRef<HTMLButtonElement>(null);
  const root = useRef<HTMLDivElement>(null);
  const listId = useId();
  // A click or focus outside closes the list, as a menu would.
  useEffect(() => {
    if (!open) return;
    const away = (e: Event) => {
      if (!root.current?.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener("pointerdown", away);
    document.addEventListener("focusin", away);
    return () => {
      document.removeEventListener("pointerdown", away);
      document.removeEventListener("focusin", away);
    };
  }, [open]);

  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    if (!open) return;
    if (e.key === "Escape") {
      e.preventDefault();
      setOpen(false);
      toggle.current?.focus();
      return;
    }
    // ↑/↓ move between the list's items (focus only; Enter or a click switches).
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    const items = Array.from(root.current?.querySelectorAll<HTMLElement>(`#${CSS.escape(listId)} :is(button, a)`) ?? []);
    if (items.length === 0) return;
    e.preventDefault();
    const at = items.indexOf(document.activeElement as HTMLElement);
    const next = at < 0 ? (e.key === "ArrowDown" ? 0 : items.length - 1) : (at + (e.key === "ArrowDown" ? 1 : -1) + items.length) % items.length;
    items[next]!.focus();
  };

  return (
    <div ref={root} className="relative" onKeyDown={onKeyDown}>
      <noscript>
        {/* Shown as it is when there is no script to open it (the button below is hidden then). */}
        <style>{".ws-needs-js{display:none}"}</style>
        <WorkspaceList workspaces={workspaces} current={current} csrf={csrf} className="flex flex-wrap items-center gap-1" />
      </noscript>
      <button
        ref={toggle}
        type="button"
        aria-expanded={open}
        aria-controls={open ? listId : undefined}
        onClick={() => setOpen((o) => !o)}
        className="ws-needs-js flex items-center gap-1 rounded-md border border-slate-300 bg-white px-2 py-1 text-sm hover:bg-slate-50"
      >
        <span className="sr-only">Workspace: </span>
        <span>{current?.name ?? "none"}</span>
        <span aria-hidden className="text-xs text-slate-500">
          ▾
        </span>
      </button>
      {open ? (
        <div id={listId} className="absolute left-0 top-full z-40 mt-1 min-w-56 rounded-md border border-slate-200 bg-white p-1 shadow-lg">
          <WorkspaceList
            workspaces={workspaces}
            current={current}
            csrf={csrf}
            className="flex flex-col"
            onSwitch={() => {
              // The page is drawn again under the same header: focus waits on the button, which
              // then names the workspace switched to.
              setOpen(false);
              toggle.current?.focus();
            }}
          />
        </div>
      ) : null}
    </div>
  );
}

function WorkspaceList({
  workspaces,
  current,
  csrf,
  className,
  onSwitch,
}: {
  workspaces: readonly Workspace[];
  current: Workspace | null;
  csrf: string;
  className: string;
  onSwitch?: () => void;
}) {
  const item = "block w-full rounded px-2 py-1 text-left text-sm text-slate-800 hover:bg-slate-100 focus-visible:outline-2 focus-visible:outline-indigo-600";
  return (
    <Form method="post" action="/workspace" onSubmit={onSwitch}>
      <CsrfInput token={csrf} />
      <ul aria-label="Your workspaces" className={className}>
        {workspaces.map((w) => {
          const here = w.id === current?.id;
          return (
            <li key={w.id}>
              <button type="submit" name="workspace" value={w.id} aria-current={here ? "true" : undefined} className={`${item} ${here ? "font-semibold" : ""}`}>
                {here ? (
                  <span aria-hidden className="mr-1 text-indigo-700">
                    ✓
                  </span>
                ) : null}
                {w.name} <span className="text-slate-500">({w.role})</span>
              </button>
            </li>
          );
        })}
        <li className="mt-1 border-t border-slate-100 pt-1">
          <Link to="/workspaces/new" className={item}>
            New workspace…
          </Link>
        </li>
      </ul>
    </Form>
  );
}
