import { useEffect, useId, useRef, useState } from "react";
import type { Terminal as XTerm } from "@xterm/xterm";

// A shell in the box: xterm.js over the socket.io namespace /terminal (server/terminal.ts).
// Client-only (xterm, its CSS and the socket are imported inside the effect). One mount is one
// shell session; when it ends, "New session" starts another.

/** How long after an Escape a Tab still leaves the terminal. */
const ESCAPE_MS = 1_500;

type Status = { kind: "connecting" } | { kind: "open" } | { kind: "closed"; why: string };

/** Fits the terminal to its element from the renderer's cell size. */
function fit(term: XTerm, el: HTMLElement) {
  const cell = (term as unknown as { _core?: { _renderService?: { dimensions?: { css?: { cell?: { width: number; height: number } } } } } })
    ._core?._renderService?.dimensions?.css?.cell;
  if (!cell?.width || !cell?.height || el.clientWidth === 0) return;
  const cols = Math.max(20, Math.floor((el.clientWidth - 16) / cell.width));
  const rows = Math.max(5, Math.floor((el.clientHeight - 8) / cell.height));
  if (cols !== term.cols || rows !== term.rows) term.resize(cols, rows);
}

export function BoxTerminal({ boxId, workspace }: { boxId: string; workspace: string }) {
  const host = useRef<HTMLDivElement>(null);
  const hintId = useId();
  const [status, setStatus] = useState<Status>({ kind: "connecting" });
  const [session, setSession] = useState(0);

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    let disposed = false;
    let cleanup = () => {};
    setStatus({ kind: "connecting" });
    void (async () => {
      const [{ Terminal }, { io }] = await Promise.all([
        import("@xterm/xterm"),
        import("socket.io-client"),
        import("@xterm/xterm/css/xterm.css"),
      ]);
      if (disposed) return;
      const term = new Terminal({
        fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace',
        fontSize: 13,
        cursorBlink: true,
        scrollback: 5000,
        theme: { background: "#020617", foreground: "#e2e8f0", cursor: "#a5b4fc", selectionBackground: "#334155" },
      });
      term.open(el);
      fit(term, el);
      // A way out for the keyboard (WCAG 2.1.2): Tab right after Escape leaves the terminal, as in
      // CodeMirror. Escape itself still goes to the shell (vi, less, readline need it), and so does
      // Tab any other time (completion); only the Tab that follows an Escape is the browser's.
      // The Escape is forgotten on any other key, when the focus leaves the terminal, and after
      // ESCAPE_MS: an Escape pressed for vi long ago must not turn a later Tab into a way out.
      let escapedAt = -Infinity;
      term.attachCustomKeyEventHandler((e) => {
        if (e.type !== "keydown" || ["Shift", "Control", "Alt", "Meta"].includes(e.key)) return true;
        const leave = performance.now() - escapedAt < ESCAPE_MS && e.key === "Tab" && !e.ctrlKey && !e.altKey && !e.metaKey;
        escapedAt = e.key === "Escape" ? performance.now() : -Infinity;
        // false: xterm leaves the key alone, so the browser moves focus on (Shift+Tab: back).
        return !leave;
      });
      const forget = () => {
        escapedAt = -Infinity;
      };
      term.textarea?.addEventListener("blur", forget);
      term.textarea?.setAttribute("aria-describedby", hintId);
      const socket = io("/terminal", {
        transports: ["websocket"],
        reconnection: false,
        auth: { workspace, box: boxId, cols: term.cols, rows: term.rows },
      });
      const close = (why: string) => {
        setStatus((s) => (s.kind === "closed" ? s : { kind: "closed", why }));
      };
      socket.on("connect", () => {
        setStatus({ kind: "open" });
        term.focus();
      });
      socket.on("connect_error", (err: Error) => close(err.message));
      socket.on("data", (d: ArrayBuffer | string) => term.write(typeof d === "string" ? d : new Uint8Array(d)));
      socket.on("exit", (e: { why?: string }) => {
        const why = e?.why ?? "the session ended";
        term.write(`\r\n\x1b[2m[${why}]\x1b[0m\r\n`);
        close(why);
      });
      socket.on("disconnect", () => close("disconnected"));
      const input = term.onData((d) => socket.emit("data", d));
      // Non-UTF-8 input (some mouse reports) goes as bytes.
      const binary = term.onBinary((d) => socket.emit("data", Uint8Array.from(d, (c) => c.charCodeAt(0) & 0xff)));
      const resized = term.onResize(({ cols, rows }) => socket.emit("resize", { cols, rows }));
      const ro = new ResizeObserver(() => fit(term, el));
      ro.observe(el);
      cleanup = () => {
        term.textarea?.removeEventListener("blur", forget);
        ro.disconnect();
        input.dispose();
        binary.dispose();
        resized.dispose();
        socket.close();
        term.dispose();
      };
    })().catch((err: Error) => setStatus({ kind: "closed", why: err.message }));
    return () => {
      disposed = true;
      cleanup();
    };
  }, [boxId, workspace, session, hintId]);

  return (
    <div className="space-y-2">
      <div className="flex items-center justify-between gap-2 text-xs text-slate-600">
        <span role="status" aria-live="polite" data-testid="terminal-status">
          {status.kind === "connecting" ? "Starting a shell…" : status.kind === "open" ? "● Connected: bash in the box" : `Closed: ${status.why}`}
        </span>
        {status.kind === "closed" ? (
          <button
            type="button"
            onClick={() => setSession((n) => n + 1)}
            className="rounded-md px-2 py-1 font-medium text-indigo-700 ring-1 ring-indigo-200 hover:bg-indigo-50"
          >
            New session
          </button>
        ) : null}
      </div>
      <div
        ref={host}
        data-testid="terminal"
        aria-label="Terminal: a shell in the box"
        className="h-80 w-full overflow-hidden rounded-lg bg-slate-950 p-2 ring-1 ring-slate-800"
      />
      <p id={hintId} className="text-xs text-slate-600">
        Keys go to the shell. To leave the terminal, press <kbd>Escape</kbd> then <kbd>Tab</kbd> (or <kbd>Shift</kbd>+<kbd>Tab</kbd>).
      </p>
    </div>
  );
}
