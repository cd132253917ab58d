import { useEffect, useMemo, useState } from "react";
import { Link } from "react-router";
import type { BoxJson } from "~/models/box.server";
import type { ScreenStatus } from "~/models/screen-status.server";
import { VncViewer, type ViewerMode, type ViewerStatus } from "./vnc-viewer";

// A box's screen on its page: the tabs of a box with several screens, and the screen itself in a
// dark frame (noVNC while the box is ready, else why not), with the viewer's state over it.

export function ScreenTabs({ box, screen, screens }: { box: BoxJson; screen: number; screens: ScreenStatus[] }) {
  if (box.screens <= 1) return null;
  return (
    <nav aria-label="Screens" className="flex flex-wrap gap-1">
      {Array.from({ length: box.screens }, (_, n) => {
        const s = screens[n];
        return (
          <Link
            key={n}
            to={`?screen=${n}`}
            aria-current={n === screen ? "page" : undefined}
            className={`rounded-md px-3 py-1.5 text-sm font-medium ${
              n === screen ? "bg-slate-900 text-white" : "text-slate-700 ring-1 ring-slate-200 hover:bg-slate-100"
            }`}
          >
            Screen {n}
            {s?.takeover ? <span className="ml-1 text-amber-500" title="A person has control">●</span> : null}
          </Link>
        );
      })}
    </nav>
  );
}

export function ScreenFrame({
  box,
  screen,
  mode,
  onClipboard,
}: {
  box: BoxJson;
  screen: number;
  mode: ViewerMode;
  onClipboard: (text: string) => void;
}) {
  const [viewer, setViewer] = useState<ViewerStatus>({ kind: "connecting" });
  const ready = box.state === "ready";
  const label = `Screen ${screen} of box ${box.id}`;
  return (
    <div
      className={`overflow-hidden rounded-2xl bg-slate-900 p-1.5 shadow-xl ring-1 ${
        mode === "control" ? "ring-2 ring-indigo-500" : "ring-slate-800"
      }`}
    >
      <div className="flex items-center justify-between px-2 pb-1.5 pt-0.5 text-xs text-slate-400">
        <span>
          Screen {screen}
          {mode === "control" ? " · your keyboard and mouse go to the box: click the screen, then type" : " · watching"}
        </span>
        {/* The viewer's own state only means something while it runs. */}
        {ready ? <ViewerBadge status={viewer} /> : null}
      </div>
      <div className="relative">
        {ready ? (
          <VncViewer
            key={`${box.id}/${screen}`}
            boxId={box.id}
            screen={screen}
            width={box.width}
            height={box.height}
            mode={mode}
            label={label}
            onStatus={setViewer}
            onClipboard={onClipboard}
          />
        ) : (
          <div
            className="grid w-full place-items-center break-words bg-slate-950 p-4 text-center text-sm text-slate-300 [overflow-wrap:anywhere]"
            style={{ aspectRatio: `${box.width} / ${box.height}`, maxHeight: "78vh" }}
          >
            {/* A starting or failed box shows its start instead (start-panel.tsx). */}
            {box.state === "paused" || box.state === "stopped"
              ? `The box is ${box.state}. Resume it to see the screen.`
              : `The box is ${box.state}${box.reason ? `: ${box.reason}` : "."}`}
          </div>
        )}
        {ready && viewer.kind !== "connected" ? <ViewerOverlay status={viewer} /> : null}
      </div>
    </div>
  );
}

function ViewerBadge({ status }: { status: ViewerStatus }) {
  const text =
    status.kind === "connected"
      ? status.mode === "control"
        ? "● in control"
        : "● live"
      : status.kind === "connecting"
        ? "connecting…"
        : status.kind === "waiting"
          ? "reconnecting…"
          : "ended";
  return (
    <span data-testid="viewer-status" className={`whitespace-nowrap ${status.kind === "connected" ? "text-emerald-400" : "text-amber-300"}`}>
      {text}
    </span>
  );
}

function ViewerOverlay({ status }: { status: ViewerStatus }) {
  const [, tick] = useState(0);
  useEffect(() => {
    if (status.kind !== "waiting") return;
    const t = setInterval(() => tick((n) => n + 1), 250);
    return () => clearInterval(t);
  }, [status]);
  const startedAt = useMemo(() => Date.now(), [status]);
  let text = "Connecting to the screen…";
  if (status.kind === "waiting") {
    const left = Math.max(0, Math.ceil((status.retryInMs - (Date.now() - startedAt)) / 1000));
    text = `Connection lost (${status.why}). Reconnecting${left > 0 ? ` in ${left} s` : ""}…`;
  } else if (status.kind === "ended") text = `The viewer stopped: ${status.why}`;
  return (
    <div className="pointer-events-none absolute inset-0 grid place-items-center bg-slate-950/60 p-4 text-center text-sm text-slate-200">
      <span className="rounded-md bg-slate-900/80 px-3 py-2 ring-1 ring-slate-700">{text}</span>
    </div>
  );
}
