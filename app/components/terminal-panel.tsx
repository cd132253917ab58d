import { useState } from "react";
import { BoxTerminal } from "./terminal";

// The box page's terminal, folded until opened: a shell in the box starts only when it is open
// and the box runs.

export function TerminalPanel({ boxId, workspace, ready }: { boxId: string; workspace: string; ready: boolean }) {
  const [open, setOpen] = useState(false);
  return (
    <details
      className="rounded-xl border border-slate-200 bg-white p-4 shadow-sm"
      onToggle={(e) => setOpen(e.currentTarget.open)}
    >
      <summary className="cursor-pointer text-sm font-semibold">Terminal</summary>
      <div className="mt-3">
        {open && ready ? (
          <BoxTerminal boxId={boxId} workspace={workspace} />
        ) : open ? (
          <p className="text-sm text-slate-600">The terminal needs a running box.</p>
        ) : null}
        <p className="mt-2 text-xs text-slate-600">
          A login shell as root in the box. The trace records that a session was opened and closed, not what was typed.
        </p>
      </div>
    </details>
  );
}
