import type RFB from "@novnc/novnc";
import { useEffect, useRef } from "react";
import { VIEWER_CLOSE, type ViewerMode } from "~/protocol/viewer-socket";

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

export type { ViewerMode };

export type ViewerStatus =
  | { kind: "connecting" }
  | { kind: "connected"; mode: ViewerMode }
  | { kind: "waiting"; retryInMs: number; why: string }
  | { kind: "ended"; why: string };

const BACKOFF_MS = [500, 1000, 2000, 4000, 8000, 10_000];

export function VncViewer({
  boxId,
  screen,
  width,
  height,
  mode,
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
  label: string;
  onStatus?: (s: ViewerStatus) => void;
  onClipboard?: (text: string) => void;
  /** The server ended this person's control connection (the screen was given back). */
  onControlEnded?: () => void;
}) {
  const host = useRef<HTMLDivElement>(null);
  const callbacks = useRef({ onStatus, onClipboard, onControlEnded });
  callbacks.current = { onStatus, onClipboard, onControlEnded };
  // The mode the next connection uses; the connection loop reads it, the [mode] effect sets it.
  const wanted = useRef<ViewerMode>(mode);
  const loop = useRef<{ reconnect(): void; mode(): ViewerMode | undefined } | null>(null);
  // Focus the screen on the first control connection after taking over, not on every reconnect.
  const focusNext = useRef(mode === "control");

  useEffect(() => {
    const target = host.current;
    if (!target) return;
    const el: HTMLDivElement = target;
    let stopped = false;
    let rfb: RFB | undefined;
    let rfbMode: ViewerMode | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let attempt = 0;
    let generation = 0;
    let RFBClass: typeof RFB | undefined;
    const status = (s: ViewerStatus) => {
      el.dataset.state = s.kind;
      callbacks.current.onStatus?.(s);
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
    };

    const retry = (why: string) => {
      if (stopped) return;
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
        if (stopped || gen !== generation) return;
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
        const r = new RFBClass(el, ws, { shared: true });
        r.scaleViewport = true;
        r.resizeSession = false;
        r.clipViewport = false;
        r.viewOnly = mode !== "control";
        r.focusOnClick = mode === "control";
        r.background = "rgb(2, 6, 23)";
        rfb = r;
        rfbMode = mode;
        r.addEventListener("connect", () => {
          if (gen !== generation) return;
          performance.mark(`holm:connected:${boxId}:${screen}`);
          attempt = 0;
          status({ kind: "connected", mode });
          el.dataset.mode = mode;
          const canvas = el.querySelector("canvas");
          if (canvas) {
            canvas.setAttribute("aria-label", label);
            canvas.setAttribute("role", "img");
          }
          // Just took over: the keyboard goes to the box without a first click.
          if (mode === "control" && focusNext.current) {
            focusNext.current = false;
            r.focus({ preventScroll: true });
          }
        });
        r.addEventListener("clipboard", (e) => callbacks.current.onClipboard?.(e.detail.text));
        r.addEventListener("disconnect", () => {
          if (stopped || gen !== generation) return;
          rfb = undefined;
          rfbMode = undefined;
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
        if (!stopped && gen === generation) retry((err as Error).message || "the connection failed");
      }
    }

    loop.current = {
      reconnect: () => {
        if (stopped) return;
        attempt = 0;
        void connect();
      },
      mode: () => rfbMode,
    };
    // The browser knows before the socket does: drop at once when offline, try again when back.
    const offline = () => {
      if (stopped) return;
      drop();
      status({ kind: "waiting", retryInMs: 0, why: "this browser is offline" });
    };
    const online = () => {
      if (!rfb && !stopped) loop.current?.reconnect();
    };
    window.addEventListener("offline", offline);
    window.addEventListener("online", online);
    void connect();
    return () => {
      stopped = true;
      window.removeEventListener("offline", offline);
      window.removeEventListener("online", online);
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

  return (
    <div
      ref={host}
      data-testid="vnc"
      data-box-id={boxId}
      data-screen={screen}
      className="relative w-full overflow-hidden bg-slate-950"
      style={{ aspectRatio: `${width} / ${height}`, maxHeight: "78vh" }}
    />
  );
}
