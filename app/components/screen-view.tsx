import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { Link } from "react-router";
import type { BoxJson } from "~/models/box.server";
import type { ScreenStatus } from "~/models/screen-status.server";
import { VncViewer, type ViewerMode, type ViewerScale, type ViewerStatus } from "./vnc-viewer";

// A box's screen on its page: the tabs of a box with several screens, and the screen itself in a
// dark frame (noVNC while the box is ready, else why not), with the viewer's state over it and
// its tools: Fit or 1:1, fullscreen (the frame itself; Esc leaves), and a pop-out window that
// shows only this screen (routes/box-screen.tsx).
//
// Fit fills the width it is given, but never more than the window's height (less the frame's
// bar), so the whole screen can be in view at once; a wider window puts the screen's frame in
// the middle.

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

/** The scale the person last chose, kept in this browser. */
function useScale(): [ViewerScale, (s: ViewerScale) => void] {
  const [scale, setScale] = useState<ViewerScale>("fit");
  useEffect(() => {
    if (localStorage.getItem("holm.screen.scale") === "1:1") setScale("1:1");
  }, []);
  const choose = useCallback((s: ViewerScale) => {
    setScale(s);
    try {
      localStorage.setItem("holm.screen.scale", s);
    } catch {
      /* storage refused: the choice lasts for this page */
    }
  }, []);
  return [scale, choose];
}

/** Whether `el` is the fullscreen element (and a function to enter or leave it). */
function useFullscreen(el: React.RefObject<HTMLElement | null>): [boolean, () => void] {
  const [on, setOn] = useState(false);
  useEffect(() => {
    const change = () => setOn(!!el.current && document.fullscreenElement === el.current);
    document.addEventListener("fullscreenchange", change);
    return () => document.removeEventListener("fullscreenchange", change);
  }, [el]);
  const toggle = useCallback(() => {
    if (document.fullscreenElement) void document.exitFullscreen().catch(() => undefined);
    else void el.current?.requestFullscreen().catch(() => undefined);
  }, [el]);
  return [on, toggle];
}

/** The pop-out's address and a window size that shows the screen at up to 1:1. */
export function popOutScreen(box: BoxJson, screen: number) {
  const w = Math.min(box.width, window.screen.availWidth - 40);
  const h = Math.min(Math.round((w * box.height) / box.width) + 44, window.screen.availHeight - 40);
  window.open(`/boxes/${encodeURIComponent(box.id)}/screen?screen=${screen}`, `holm-screen-${box.id}-${screen}`, `popup,width=${w},height=${h}`);
}

const toolButton =
  "rounded px-2 py-0.5 font-medium text-slate-200 ring-1 ring-slate-700 hover:bg-slate-800 focus-visible:outline-none focus-visible:ring-2 focus-visible:ring-indigo-400";

export function ScreenFrame({
  box,
  screen,
  mode,
  onClipboard,
  popOut = true,
  fill = false,
}: {
  box: BoxJson;
  screen: number;
  mode: ViewerMode;
  onClipboard: (text: string) => void;
  /** Offer the pop-out window (not inside the pop-out itself). */
  popOut?: boolean;
  /** Fill the parent's height (the pop-out window) rather than keep the screen's aspect. */
  fill?: boolean;
}) {
  const [viewer, setViewer] = useState<ViewerStatus>({ kind: "connecting" });
  // Once something was shown, a reconnect keeps it on screen (the viewer keeps the last frame).
  const [shown, setShown] = useState(false);
  const onStatus = useCallback((s: ViewerStatus) => {
    setViewer(s);
    if (s.kind === "connected") setShown(true);
  }, []);
  const [scale, setScale] = useScale();
  const frame = useRef<HTMLDivElement>(null);
  const [fullscreen, toggleFullscreen] = useFullscreen(frame);
  // Taking over brings the whole screen into view (Fit keeps it within the window's height).
  useEffect(() => {
    if (mode === "control") frame.current?.scrollIntoView({ block: "nearest", behavior: "instant" });
  }, [mode]);
  const ready = box.state === "ready";
  const why =
    box.state === "paused" || box.state === "stopped"
      ? `The box is ${box.state}. Resume it to see the screen.`
      : `The box is ${box.state}${box.reason ? `: ${box.reason}` : "."}`;
  // Once the box was not ready on this page, its coming back is news too.
  const [wasDown, setWasDown] = useState(!ready);
  useEffect(() => {
    if (!ready) setWasDown(true);
  }, [ready]);
  const label = `Screen ${screen} of box ${box.id}`;
  const filling = fill || fullscreen;
  const ratio = box.width / box.height;
  // Fit, in the page: as wide as given, no taller than the window less the frame's bar.
  const width = !filling && scale === "fit" ? `min(100%, calc((100dvh - 4.5rem) * ${ratio.toFixed(4)}))` : undefined;
  return (
    <div
      ref={frame}
      data-testid="screen-frame"
      className={`tone-fixed mx-auto overflow-hidden bg-slate-900 p-1.5 ring-1 ${filling ? "flex h-full flex-col" : "rounded-2xl shadow-xl"} ${
        mode === "control" ? "ring-2 ring-indigo-500" : "ring-slate-800"
      }`}
      style={{ width }}
    >
      <div className="flex flex-wrap items-center justify-between gap-x-3 gap-y-1 px-2 pb-1.5 pt-0.5 text-xs text-slate-300">
        <span className="min-w-0">
          Screen {screen}
          {mode === "control" ? " · your keyboard and mouse go to the box: click the screen, then type" : " · watching"}
        </span>
        <div className="flex flex-wrap items-center gap-2">
          {ready ? (
            <>
              <div role="group" aria-label="Scale" className="flex">
                {(["fit", "1:1"] as const).map((s) => (
                  <button
                    key={s}
                    type="button"
                    aria-pressed={scale === s}
                    title={s === "fit" ? "Fit the whole screen in view" : "One box pixel per screen pixel; scroll to see the rest"}
                    onClick={() => setScale(s)}
                    className={`${toolButton} ${s === "fit" ? "rounded-r-none" : "-ml-px rounded-l-none"} ${scale === s ? "bg-slate-700 text-white" : ""}`}
                  >
                    {s === "fit" ? "Fit" : "1:1"}
                  </button>
                ))}
              </div>
              <button type="button" aria-pressed={fullscreen} onClick={toggleFullscreen} className={toolButton} title="Esc leaves fullscreen">
                {fullscreen ? "Exit fullscreen" : "Fullscreen"}
              </button>
              {popOut ? (
                <button type="button" onClick={() => popOutScreen(box, screen)} className={toolButton} title="Open this screen in a window of its own">
                  Pop out
                </button>
              ) : null}
            </>
          ) : null}
          {/* The viewer's own state only means something while it runs. */}
          {ready ? <ViewerBadge status={viewer} /> : null}
        </div>
      </div>
      <div className={`relative ${filling ? "min-h-0 flex-1" : ""}`}>
        {ready ? (
          <VncViewer
            key={`${box.id}/${screen}`}
            boxId={box.id}
            screen={screen}
            width={box.width}
            height={box.height}
            mode={mode}
            scale={scale}
            fill={filling}
            label={label}
            onStatus={onStatus}
            onClipboard={onClipboard}
          />
        ) : null}
        {/* Why there is no screen (a starting or failed box shows its start instead: start-panel.tsx),
            in place of it. The same element stays mounted while the box runs (hidden, and empty until
            the box was down), so a pause by an agent, a stop or a lost box is announced: a live region
            is heard when its text changes, and the control banner goes away with the screen. */}
        <div
          role="status"
          data-testid="screen-state"
          className={
            ready
              ? "sr-only"
              : "grid w-full place-items-center break-words bg-slate-950 p-4 text-center text-sm text-slate-300 [overflow-wrap:anywhere]"
          }
          style={ready ? undefined : { aspectRatio: `${box.width} / ${box.height}`, maxHeight: "78vh" }}
        >
          {ready ? (wasDown ? "The box is ready: its screen is live again." : "") : why}
        </div>
        {ready && viewer.kind !== "connected" ? <ViewerOverlay status={viewer} framed={shown} /> : null}
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

/**
 * What the viewer is doing when it is not live. Over a kept frame, connecting says nothing for
 * a second (a switch between watching and control is quicker than that) and then only in a
 * corner; a lost connection says so over the frame without hiding it.
 */
function ViewerOverlay({ status, framed }: { status: ViewerStatus; framed: boolean }) {
  const [, tick] = useState(0);
  const [late, setLate] = useState(false);
  useEffect(() => {
    setLate(false);
    const t = setTimeout(() => setLate(true), 1000);
    return () => clearTimeout(t);
  }, [status]);
  useEffect(() => {
    if (status.kind !== "waiting") return;
    const t = setInterval(() => tick((n) => n + 1), 250);
    return () => clearInterval(t);
  }, [status]);
  const startedAt = useMemo(() => Date.now(), [status]);
  if (status.kind === "connecting" && framed) {
    if (!late) return null;
    return (
      <span className="pointer-events-none absolute right-2 top-2 rounded-md bg-slate-900/80 px-2 py-1 text-xs text-slate-200 ring-1 ring-slate-700">
        Connecting…
      </span>
    );
  }
  let text = "Connecting to the screen…";
  if (status.kind === "waiting") {
    const left = Math.max(0, Math.ceil((status.retryInMs - (Date.now() - startedAt)) / 1000));
    text = `Connection lost (${status.why}). Reconnecting${left > 0 ? ` in ${left} s` : ""}…`;
  } else if (status.kind === "ended") text = `The viewer stopped: ${status.why}`;
  return (
    <div
      className={`pointer-events-none absolute inset-0 grid place-items-center p-4 text-center text-sm text-slate-200 ${
        framed ? "bg-slate-950/30" : "bg-slate-950/60"
      }`}
    >
      <span className="rounded-md bg-slate-900/80 px-3 py-2 ring-1 ring-slate-700">{text}</span>
    </div>
  );
}
