import type RFB from "@novnc/novnc";
import { useEffect, useRef, useState } from "react";
import { VIEWER_CLOSE, VIEWER_HEARTBEAT, type ViewerMode } from "~/protocol/viewer-socket";
import { MODIFIER_KEYSYMS, matchShortcut } from "./screen-shortcuts";

// The live screen of a box: noVNC over the server's viewer socket
// (/v1/boxes/{id}/screens/{n}/viewer/socket?ticket=…&mode=view|control). Client-only: noVNC is
// imported inside the effect, so server rendering never loads it. Every (re)connection asks the
// console for a fresh ticket (/boxes/{id}/ticket), and a dropped connection comes back with
// backoff (0.5 s, 1 s, 2 s … 10 s) without touching anything in the box. The mode follows the
// page: `control` while this person has control, `view` otherwise; when the server ends a control
// connection because the screen was given back, the viewer comes back at once in view mode.
// Keys and the pointer go to the box in control mode while the screen has focus. Text for the
// box's clipboard does not go over VNC: x11vnc takes ClientCutText but then cannot serve the
// selection to X clients (LibVNC/x11vnc#87, seen here), so the page sets it through the agent.
//
// Only a live page counts as watching: the page closes its connection on `pagehide` and `freeze`
// (Chromium keeps a page's sockets open while it sits in the back/forward cache) and comes back on
// `pageshow`/`resume`, and it answers the server's heartbeat (protocol/viewer-socket.ts), so a page
// frozen without notice is closed by the server. Between two connections (take over, give back, a
// reconnect) the last frame stays on screen: noVNC takes its canvas out of the page when it
// disconnects, so the canvas moves under the next connection's, which is transparent until its
// first update paints over it.

export type { ViewerMode };

/** `fit`: the whole screen in the space given; `1:1`: one box pixel per device pixel, scrolling. */
export type ViewerScale = "fit" | "1:1";

export type ViewerStatus =
  | { kind: "connecting" }
  | { kind: "connected"; mode: ViewerMode }
  | { kind: "waiting"; retryInMs: number; why: string }
  | { kind: "ended"; why: string };

const BACKOFF_MS = [500, 1000, 2000, 4000, 8000, 10_000];
/** How long a kept frame waits for the next connection's first paint before it goes anyway. */
const KEEP_FRAME_MS = 8000;

/** Whether a canvas has been drawn on (noVNC's draws are opaque; a fresh canvas is transparent). */
function painted(c: HTMLCanvasElement): boolean {
  if (c.width === 0 || c.height === 0) return false;
  const ctx = c.getContext("2d");
  if (!ctx) return false;
  const points = [
    [0.5, 0.5],
    [0.02, 0.02],
    [0.98, 0.02],
    [0.02, 0.98],
    [0.98, 0.98],
  ];
  return points.every(([x, y]) => ctx.getImageData(Math.floor(x! * (c.width - 1)), Math.floor(y! * (c.height - 1)), 1, 1).data[3]! > 0);
}

export function VncViewer({
  boxId,
  screen,
  width,
  height,
  mode,
  scale = "fit",
  fill = false,
  label,
  onStatus,
  onClipboard,
  onControlEnded,
}: {
  boxId: string;
  screen: number;
  width: number;
  height: number;
  mode: ViewerMode;
  scale?: ViewerScale;
  /** Fill the parent's height (fullscreen, the pop-out) instead of keeping the screen's aspect. */
  fill?: boolean;
  label: string;
  onStatus?: (s: ViewerStatus) => void;
  onClipboard?: (text: string) => void;
  /** The server ended this person's control connection (the screen was given back). */
  onControlEnded?: () => void;
}) {
  const host = useRef<HTMLDivElement>(null);
  const kept = useRef<HTMLDivElement>(null);
  const callbacks = useRef({ onStatus, onClipboard, onControlEnded });
  callbacks.current = { onStatus, onClipboard, onControlEnded };
  // The mode the next connection uses; the connection loop reads it, the [mode] effect sets it.
  const wanted = useRef<ViewerMode>(mode);
  const loop = useRef<{ reconnect(): void; mode(): ViewerMode | undefined } | null>(null);
  // Focus the screen on the first control connection after taking over, not on every reconnect.
  const focusNext = useRef(mode === "control");
  const dpr = useDevicePixelRatio();

  useEffect(() => {
    const target = host.current;
    if (!target) return;
    const el: HTMLDivElement = target;
    let stopped = false;
    let suspended = false;
    let rfb: RFB | undefined;
    let rfbMode: ViewerMode | undefined;
    let canvas: HTMLCanvasElement | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let attempt = 0;
    let generation = 0;
    let RFBClass: typeof RFB | undefined;
    const status = (s: ViewerStatus) => {
      el.dataset.state = s.kind;
      callbacks.current.onStatus?.(s);
    };

    // noVNC has just taken its screen out of the page; its canvas still holds the last frame.
    // An unpainted one (a connection that never drew) leaves the frame kept before it.
    const keepFrame = () => {
      const c = canvas;
      canvas = undefined;
      if (!c || !kept.current || !painted(c)) return;
      c.removeAttribute("aria-label");
      c.removeAttribute("role");
      kept.current.replaceChildren(c);
      el.dataset.frame = "kept";
    };
    const releaseFrame = () => {
      kept.current?.replaceChildren();
      delete el.dataset.frame;
    };
    // Until the new connection's canvas has painted, the kept frame shows through it.
    const releaseWhenPainted = (gen: number, c: HTMLCanvasElement | undefined) => {
      const until = performance.now() + KEEP_FRAME_MS;
      const tick = () => {
        if (gen !== generation) return;
        if (!c || painted(c) || performance.now() > until) return releaseFrame();
        setTimeout(tick, 40);
      };
      tick();
    };

    const drop = () => {
      generation++;
      clearTimeout(timer);
      const old = rfb;
      rfb = undefined;
      rfbMode = undefined;
      try {
        old?.disconnect();
      } catch {
        /* already gone */
      }
      keepFrame();
    };

    const retry = (why: string) => {
      if (stopped || suspended) return;
      const delay = BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]!;
      attempt++;
      status({ kind: "waiting", retryInMs: delay, why });
      timer = setTimeout(() => void connect(), delay);
    };

    const end = (why: string) => {
      stopped = true;
      drop();
      status({ kind: "ended", why });
    };

    async function connect() {
      drop();
      const gen = generation;
      const mode = wanted.current;
      status({ kind: "connecting" });
      performance.mark(`holm:ticket:${boxId}:${screen}`);
      try {
        RFBClass ??= (await import("@novnc/novnc")).default;
        const res = await fetch(`/boxes/${encodeURIComponent(boxId)}/ticket?screen=${screen}&mode=${mode}`, {
          headers: { accept: "application/json" },
          cache: "no-store",
        });
        const body = (await res.json().catch(() => ({}))) as { path?: string; message?: string; code?: string; retryable?: boolean };
        if (stopped || suspended || gen !== generation) return;
        if (!res.ok || !body.path) {
          // The seed's table: no box (404 not_found), removed (410 gone), signed out (401
          // unauthorized) end the viewer; 409 denied is about this mode or this box's state.
          if (res.status === 404 || res.status === 410) return end(body.message ?? "the box is gone");
          if (res.status === 401) return end(body.message ?? "sign in again");
          if (mode === "control" && body.code === "denied") {
            // No longer allowed to drive (role changed, someone holds the screen): watch instead.
            wanted.current = "view";
            callbacks.current.onControlEnded?.();
          } else if (body.code === "denied" && body.retryable === false) {
            // Nothing to wait for (the box failed to start).
            return end(body.message ?? "the box cannot be watched");
          }
          return retry(body.message ?? `the console answered ${res.status}`);
        }
        const url = new URL(body.path, window.location.href);
        url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
        const ws = new WebSocket(url);
        ws.binaryType = "arraybuffer";
        let closed: { code: number; reason: string } | undefined;
        // Registered before noVNC's handler, so the close code is known when noVNC reports.
        ws.addEventListener("close", (e) => (closed = { code: e.code, reason: e.reason }));
        // The heartbeat: ask for it, then answer each beat (noVNC ignores text frames).
        ws.addEventListener("open", () => ws.send(VIEWER_HEARTBEAT.text));
        ws.addEventListener("message", (e) => {
          if (typeof e.data === "string" && ws.readyState === WebSocket.OPEN) ws.send(VIEWER_HEARTBEAT.text);
        });
        const r = new RFBClass(el, ws, { shared: true });
        r.scaleViewport = true;
        r.resizeSession = false;
        r.clipViewport = false;
        r.viewOnly = mode !== "control";
        r.focusOnClick = mode === "control";
        // Transparent until the first update, so the kept frame shows through.
        r.background = "transparent";
        rfb = r;
        rfbMode = mode;
        canvas = el.querySelector("canvas") ?? undefined;
        r.addEventListener("connect", () => {
          if (gen !== generation) return;
          performance.mark(`holm:connected:${boxId}:${screen}`);
          attempt = 0;
          status({ kind: "connected", mode });
          el.dataset.mode = mode;
          if (canvas) {
            canvas.setAttribute("aria-label", label);
            canvas.setAttribute("role", "img");
          }
          releaseWhenPainted(gen, canvas);
          // Just took over: the keyboard goes to the box without a first click.
          if (mode === "control" && focusNext.current) {
            focusNext.current = false;
            r.focus({ preventScroll: true });
          }
        });
        r.addEventListener("clipboard", (e) => callbacks.current.onClipboard?.(e.detail.text));
        r.addEventListener("disconnect", () => {
          if (stopped || suspended || gen !== generation) return;
          rfb = undefined;
          rfbMode = undefined;
          keepFrame();
          const why = closed;
          if (why?.code === VIEWER_CLOSE.noBox) return end(why.reason || "the box was removed");
          if ((why?.code === VIEWER_CLOSE.normal || why?.code === VIEWER_CLOSE.denied) && mode === "control") {
            // The screen was given back, or control is no longer ours: watch again, at once.
            wanted.current = "view";
            callbacks.current.onControlEnded?.();
            attempt = 0;
            void connect();
            return;
          }
          retry(why?.reason || "the connection dropped");
        });
      } catch (err) {
        if (!stopped && !suspended && gen === generation) retry((err as Error).message || "the connection failed");
      }
    }

    loop.current = {
      reconnect: () => {
        if (stopped || suspended) return;
        attempt = 0;
        void connect();
      },
      mode: () => rfbMode,
    };
    // The browser knows before the socket does: drop at once when offline, try again when back.
    const offline = () => {
      if (stopped || suspended) return;
      drop();
      status({ kind: "waiting", retryInMs: 0, why: "this browser is offline" });
    };
    const online = () => {
      if (!rfb && !stopped) loop.current?.reconnect();
    };
    // Leaving the page (into the back/forward cache, or frozen): nobody watches from here.
    const suspend = () => {
      if (stopped || suspended) return;
      suspended = true;
      drop();
    };
    const resume = () => {
      if (stopped || !suspended) return;
      suspended = false;
      loop.current?.reconnect();
    };
    const shown = (e: PageTransitionEvent) => {
      if (e.persisted) resume();
    };
    // The shortcuts' chord stays out of the box; before a give back, the modifiers noVNC already
    // pressed in the box are released (the connection closes before the person lets go).
    const chord = (e: KeyboardEvent) => {
      const which = matchShortcut(e);
      if (!which || !rfb || rfbMode !== "control") return;
      e.preventDefault();
      e.stopPropagation();
      if (which === "giveBack") for (const [keysym, code] of MODIFIER_KEYSYMS) rfb.sendKey(keysym, code, false);
    };
    window.addEventListener("offline", offline);
    window.addEventListener("online", online);
    window.addEventListener("pagehide", suspend);
    window.addEventListener("pageshow", shown);
    document.addEventListener("freeze", suspend);
    document.addEventListener("resume", resume);
    window.addEventListener("keydown", chord, true);
    void connect();
    return () => {
      stopped = true;
      window.removeEventListener("offline", offline);
      window.removeEventListener("online", online);
      window.removeEventListener("pagehide", suspend);
      window.removeEventListener("pageshow", shown);
      document.removeEventListener("freeze", suspend);
      document.removeEventListener("resume", resume);
      window.removeEventListener("keydown", chord, true);
      drop();
      loop.current = null;
    };
  }, [boxId, screen, label]);

  // A change of mode (took over, gave back) reconnects with a ticket for the new mode.
  useEffect(() => {
    if (wanted.current === mode && (loop.current?.mode() ?? mode) === mode) return;
    wanted.current = mode;
    focusNext.current = mode === "control";
    loop.current?.reconnect();
  }, [mode]);

  // Fit: noVNC scales the screen into the stage. 1:1: the stage is the screen's size in CSS
  // pixels of one device pixel each, and the area around it scrolls.
  const oneToOne = scale === "1:1";
  const area = fill
    ? undefined
    : oneToOne
      ? { height: `min(${height / dpr}px, calc(100dvh - 4rem))` }
      : { aspectRatio: `${width} / ${height}` };
  const stage = oneToOne ? { width: `${width / dpr}px`, height: `${height / dpr}px`, margin: "0 auto" } : undefined;
  return (
    <div
      data-testid="screen-area"
      data-scale={scale}
      className={`relative w-full bg-slate-950 ${fill ? "h-full" : ""} ${oneToOne ? "overflow-auto" : "overflow-hidden"}`}
      style={area}
    >
      <div className={`relative ${oneToOne ? "" : "h-full w-full"}`} style={stage}>
        <div ref={kept} aria-hidden="true" data-testid="kept-frame" className="pointer-events-none absolute inset-0 flex overflow-hidden" />
        <div ref={host} data-testid="vnc" data-box-id={boxId} data-screen={screen} className="relative h-full w-full overflow-hidden" />
      </div>
    </div>
  );
}

/** The display's device pixels per CSS pixel (1 while rendering on the server); follows zoom. */
function useDevicePixelRatio(): number {
  const [dpr, setDpr] = useState(1);
  useEffect(() => {
    const read = () => setDpr(window.devicePixelRatio || 1);
    read();
    window.addEventListener("resize", read);
    return () => window.removeEventListener("resize", read);
  }, []);
  return dpr;
}
