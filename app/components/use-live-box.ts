import { useCallback, useEffect, useRef, useState } from "react";
import { useRevalidator } from "react-router";
import { io } from "socket.io-client";
import type { BoxJson } from "~/models/box.server";
import type { Role } from "~/models/roles";
import type { ScreenStatus } from "~/models/screen-status.server";

// The box page's live state: the box and its screens as the server pushes them over socket.io
// (`box` and `screens` on /boxes), and a clock for ages and deadlines. A page that is put away
// (the back/forward cache, a frozen tab) closes its socket and opens it again when it is shown,
// catching up through the loader.

/** Re-renders every few seconds so ages and deadlines stay true; starts at the server's clock so hydration matches. */
export function useNow(everyMs: number, initial: number) {
  const [now, setNow] = useState(initial);
  useEffect(() => {
    setNow(Date.now());
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}

/** The box and its screens, kept current by the server's pushes; the loader paints first. */
/** `next`, keeping `prev`'s start progress when it is further along in the same state. */
export function laterStart(prev: BoxJson, next: BoxJson): BoxJson {
  const a = prev.start;
  const b = next.start;
  if (!a || !b || prev.state !== next.state) return next;
  const ahead = a.phases.length > b.phases.length || (a.phases.length === b.phases.length && (a.build?.step ?? -1) > (b.build?.step ?? -1));
  return ahead ? { ...next, start: a } : next;
}

/**
 * A change of the person's access the server told this page of (server/revocation.ts): a new
 * role (the page draws itself again for it), or access gone (`removed` from the workspace, or
 * `ended` with why: the session ended, or the socket was refused when it reconnected).
 */
export type LiveAccess = { kind: "role"; role: Role } | { kind: "removed" } | { kind: "ended"; why: string };

export function useLiveBox(initial: BoxJson, initialScreens: ScreenStatus[], workspace: string) {
  const [box, setBox] = useState(initial);
  const [screens, setScreens] = useState(initialScreens);
  const [live, setLive] = useState(false);
  const [access, setAccess] = useState<LiveAccess | null>(null);
  // The server could not check this person's access (the store did not answer): trying again.
  const [retrying, setRetrying] = useState(false);
  const revalidator = useRevalidator();
  const revalidate = useRef(revalidator.revalidate);
  revalidate.current = revalidator.revalidate;
  // The loader's box may be older than one already pushed (the first connect revalidates, and a
  // start's progress is pushed meanwhile): a start's progress never goes back within one state
  // (a CI run saw an image build's "step 1" turn back to "preparing" before "step 4").
  useEffect(() => setBox((prev) => (prev.id === initial.id ? laterStart(prev, initial) : initial)), [initial]);
  // Keep whichever status of each screen is newest (loader data and pushes may cross).
  const merge = useCallback((incoming: ScreenStatus) => {
    setScreens((prev) => {
      const cur = prev[incoming.screen];
      if (cur && cur.seq > incoming.seq) return prev;
      const next = prev.slice();
      next[incoming.screen] = incoming;
      return next;
    });
  }, []);
  useEffect(() => {
    for (const s of initialScreens) merge(s);
  }, [initialScreens, merge]);
  useEffect(() => {
    const socket = io("/boxes", { transports: ["websocket"], auth: { workspace } });
    // socket.io retries a network error itself, but neither a refused handshake nor a socket the
    // server closed: those this page retries, with back-off, unless its access is known gone.
    let gone = false;
    let tries = 0;
    let retry: ReturnType<typeof setTimeout> | undefined;
    const reconnect = () => {
      if (gone || retry !== undefined) return;
      setRetrying(true);
      retry = setTimeout(() => {
        retry = undefined;
        if (!gone && !socket.connected) socket.connect();
      }, Math.min(1000 * 2 ** tries++, 15_000));
    };
    socket.on("connect", () => {
      tries = 0;
      setRetrying(false);
      setLive(true);
      // What was pushed before this socket joined is caught up through the loader: after a drop,
      // and on the first connect too (the page's own viewer may have been counted between the
      // loader's read and the join, and its push missed: a CI run showed "0 watching" for good).
      void revalidate.current();
    });
    socket.on("disconnect", (reason) => {
      setLive(false);
      // The server closed it without saying the access is gone (it could not check it).
      if (reason === "io server disconnect") reconnect();
    });
    socket.on("access", (a: LiveAccess) => {
      if (a.kind !== "role") gone = true;
      setAccess(a);
      // The loader draws the page for the new role (a viewer's page has no Take over). Access
      // gone: the page stays as it is, under the notice; its loader would only say "not found".
      if (a.kind === "role") void revalidate.current();
    });
    // A handshake refused for access (no longer a member, signed out: `data.access`, from
    // server/socket-auth.ts) is final: say why rather than "connecting…" for good. Refused for
    // anything else (the store is down), it is tried again; a network error socket.io retries
    // itself (`active`).
    socket.on("connect_error", (err: Error & { data?: { access?: boolean } }) => {
      if (socket.active) return;
      if (err.data?.access) {
        gone = true;
        setRetrying(false);
        setAccess((prev) => (prev && prev.kind !== "role" ? prev : { kind: "ended", why: err.message }));
      } else reconnect();
    });
    socket.on("box", (b: BoxJson) => {
      if (b.id !== initial.id) return;
      if (b.state === "gone") void revalidate.current();
      else setBox(b);
    });
    socket.on("screens", (s: ScreenStatus) => {
      if (s.box_id === initial.id) merge(s);
    });
    const hide = () => socket.disconnect();
    const show = () => {
      if (!socket.connected) socket.connect();
    };
    const shown = (e: PageTransitionEvent) => {
      if (e.persisted) show();
    };
    window.addEventListener("pagehide", hide);
    window.addEventListener("pageshow", shown);
    document.addEventListener("freeze", hide);
    document.addEventListener("resume", show);
    return () => {
      window.removeEventListener("pagehide", hide);
      window.removeEventListener("pageshow", shown);
      document.removeEventListener("freeze", hide);
      document.removeEventListener("resume", show);
      gone = true;
      clearTimeout(retry);
      socket.close();
    };
  }, [workspace, initial.id, merge]);
  return { box, screens, live, retrying, access };
}
