import { type RefObject, memo, useEffect, useRef, useState, useSyncExternalStore } from "react";
import type { BoxJson } from "~/models/box.server";
import { usePageWorkspace } from "./ui";

// A row's live thumbnail of screen 0. The rows on screen (one IntersectionObserver for the
// whole list), while the tab is visible, are asked about together: one GET /boxes/thumbs?ids=…
// every REFRESH_MS answers each one's current ETag (app/routes/box-thumbs.ts), and a row loads
// its picture (/boxes/:id/thumb?v=<etag>, cached by the browser for good) only when its ETag
// changed. So a list of still screens costs one small request every few seconds, not one per row.
// A ready box is asked every time; a paused or stopped one once (it shows its last picture); a
// starting or failed one never (a placeholder).

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
const usePageVisible = () => useSyncExternalStore(onVisibility, () => document.visibilityState === "visible", () => true);

// ---- the list's one poller: the rows that want an answer, asked together.

interface Want {
  /** Called with the box's current ETag (null: no picture yet). */
  got: (etag: string | null) => void;
  /** Ask again every REFRESH_MS (a ready box), or once. */
  again: boolean;
  /** The workspace the list was drawn for: another tab may have switched the session's since. */
  workspace: string | undefined;
}
const wants = new Map<string, Want>();
let timer: ReturnType<typeof setTimeout> | undefined;
let asking = false;
/** A row came while a round was out: ask again soon after it, not a whole REFRESH_MS later. */
let newcomer = false;

/** Asks soon (a row just came on screen: a short wait gathers the others), or after REFRESH_MS. */
function schedule(ms: number) {
  if (asking) {
    if (ms < REFRESH_MS) newcomer = true;
    return;
  }
  if (timer !== undefined) {
    if (ms >= REFRESH_MS) return;
    clearTimeout(timer);
  }
  timer = setTimeout(() => void ask(), ms);
}

async function ask() {
  timer = undefined;
  if (wants.size === 0) return;
  asking = true;
  // One request per workspace (a page shows one; the key keeps a stale row's answer its own).
  const byWorkspace = new Map<string | undefined, string[]>();
  for (const [id, w] of wants) byWorkspace.set(w.workspace, [...(byWorkspace.get(w.workspace) ?? []), id]);
  for (const [workspace, ids] of byWorkspace) await askAbout(workspace, ids);
  asking = false;
  const soon = newcomer;
  newcomer = false;
  if (wants.size) schedule(soon ? 50 : REFRESH_MS);
}

async function askAbout(workspace: string | undefined, ids: string[]) {
  try {
    const query = `ids=${ids.join(",")}${workspace ? `&workspace=${encodeURIComponent(workspace)}` : ""}`;
    const res = await fetch(`/boxes/thumbs?${query}`, { cache: "no-store" });
    if (res.ok) {
      const { thumbs } = (await res.json()) as { thumbs: Record<string, string | null> };
      for (const id of ids) {
        const w = wants.get(id);
        if (!w || !(id in thumbs)) continue;
        w.got(thumbs[id]!);
        if (!w.again) wants.delete(id);
      }
    }
  } catch {
    // The server is restarting, or the page is going away: the next round tries again.
  }
}

function want(id: string, w: Want): () => void {
  wants.set(id, w);
  schedule(50);
  return () => {
    if (wants.get(id) === w) wants.delete(id);
  };
}

// Not the state's own word: the row's state pill says that, once.
const PLACEHOLDER: Partial<Record<BoxJson["state"], string>> = {
  starting: "Desktop coming up…",
  failed: "No desktop",
};

function BoxThumbInner({ id, state, width, height, title }: { id: string; state: BoxJson["state"]; width: number; height: number; title: string }) {
  const ref = useRef<HTMLDivElement>(null);
  const onScreen = useOnScreen(ref);
  const pageVisible = usePageVisible();
  const [etag, setEtag] = useState<string | null>(null);
  const workspace = usePageWorkspace();
  const asks = state === "ready" || state === "paused" || state === "stopped" || state === "unreachable";

  useEffect(() => {
    if (!asks || !onScreen || !pageVisible) return;
    return want(id, { got: (e) => e !== null && setEtag(e), again: state === "ready", workspace });
  }, [id, state, asks, onScreen, pageVisible, workspace]);

  return (
    <div ref={ref} className="box-thumb" style={{ aspectRatio: `${width} / ${height}` }}>
      {asks && etag ? (
        <img
          src={`/boxes/${id}/thumb?v=${encodeURIComponent(etag)}`}
          alt={`Screen of ${title}`}
          data-etag={etag}
          decoding="async"
          className="absolute inset-0 h-full w-full object-cover"
        />
      ) : (
        <span className="box-thumb-none">{PLACEHOLDER[state] ?? "No picture yet"}</span>
      )}
    </div>
  );
}

export const BoxThumb = memo(BoxThumbInner);
