import { type RefObject, memo, useEffect, useRef, useState, useSyncExternalStore } from "react";
import type { BoxJson } from "~/models/box.server";

// A row's live thumbnail of screen 0 (GET /boxes/:id/thumb, app/routes/box-thumb.ts). It asks
// only while the row is on screen (one IntersectionObserver for the whole list) and the tab is
// visible, every REFRESH_MS for a ready box, once for a paused or stopped one (which shows its
// last picture); never for a starting or failed box (a placeholder). Each ask sends the ETag it
// has, so an unchanged screen is a 304 with no body.

export const REFRESH_MS = 4000;

type Seen = (visible: boolean) => void;
let observer: IntersectionObserver | undefined;
const watchers = new Map<Element, Seen>();

function observe(el: Element, seen: Seen): () => void {
  observer ??= new IntersectionObserver(
    (entries) => {
      for (const e of entries) watchers.get(e.target)?.(e.isIntersecting);
    },
    { rootMargin: "100px" },
  );
  watchers.set(el, seen);
  observer.observe(el);
  return () => {
    watchers.delete(el);
    observer?.unobserve(el);
  };
}

function useOnScreen(ref: RefObject<Element | null>): boolean {
  const [on, setOn] = useState(false);
  useEffect(() => (ref.current ? observe(ref.current, setOn) : undefined), [ref]);
  return on;
}

// Whether the tab is visible: one listener for the whole list.
const onVisibility = (notify: () => void) => {
  document.addEventListener("visibilitychange", notify);
  return () => document.removeEventListener("visibilitychange", notify);
};
const usePageVisible = () =>
  useSyncExternalStore(onVisibility, () => document.visibilityState === "visible", () => true);

// Not the state's own word: the row's state pill says that, once.
const PLACEHOLDER: Partial<Record<BoxJson["state"], string>> = {
  starting: "Desktop coming up…",
  failed: "No desktop",
};

function BoxThumbInner({ id, state, width, height, title }: { id: string; state: BoxJson["state"]; width: number; height: number; title: string }) {
  const ref = useRef<HTMLDivElement>(null);
  const onScreen = useOnScreen(ref);
  const pageVisible = usePageVisible();
  const [src, setSrc] = useState<string>();
  const etag = useRef<string | null>(null);
  const url = useRef<string | undefined>(undefined);
  const asks = state === "ready" || state === "paused" || state === "stopped" || state === "unreachable";

  useEffect(() => {
    if (!asks || !onScreen || !pageVisible) return;
    const ctl = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ask = async () => {
      try {
        const res = await fetch(`/boxes/${id}/thumb`, {
          headers: etag.current ? { "if-none-match": etag.current } : {},
          cache: "no-store",
          signal: ctl.signal,
        });
        if (res.status === 200) {
          const next = URL.createObjectURL(await res.blob());
          if (ctl.signal.aborted) return URL.revokeObjectURL(next);
          if (url.current) URL.revokeObjectURL(url.current);
          url.current = next;
          etag.current = res.headers.get("etag");
          setSrc(next);
        }
      } catch {
        // Aborted, or the server is restarting: the next ask tries again.
      }
      if (!ctl.signal.aborted && state === "ready") timer = setTimeout(ask, REFRESH_MS);
    };
    void ask();
    return () => {
      ctl.abort();
      clearTimeout(timer);
    };
  }, [id, state, asks, onScreen, pageVisible]);

  useEffect(() => () => void (url.current && URL.revokeObjectURL(url.current)), []);

  const shown = asks ? src : undefined;
  return (
    <div
      ref={ref}
      className="box-thumb"
      style={{ aspectRatio: `${width} / ${height}` }}
    >
      {shown ? (
        <img src={shown} alt={`Screen of ${title}`} data-etag={etag.current ?? undefined} className="absolute inset-0 h-full w-full object-cover" />
      ) : (
        <span className="box-thumb-none">{PLACEHOLDER[state] ?? "No picture yet"}</span>
      )}
    </div>
  );
}

export const BoxThumb = memo(BoxThumbInner);
