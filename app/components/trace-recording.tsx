import { useEffect, useRef } from "react";
import type { RecordingSpan } from "~/models/trace-summary";
import { clock } from "./trace-describe";

// The screen recording that covers the selected entry, on the trace page: the video at the
// matching moment (the entry's time less the recording's first frame), to play on from there,
// and the file to download. A recording still running, or one the trace could not keep, says so.

export function RecordingPlayer({ span, atMs, url }: { span: RecordingSpan; atMs: number | undefined; url: string | null }) {
  const video = useRef<HTMLVideoElement>(null);
  const at = atMs === undefined ? undefined : Math.max(0, (atMs - span.started_at_ms) / 1000);
  useEffect(() => {
    const v = video.current;
    // Moving along the trace moves the video; a video that plays is left to play.
    if (!v || at === undefined || !v.paused) return;
    const seek = () => {
      v.currentTime = Math.min(at, Number.isFinite(v.duration) ? v.duration : at);
    };
    if (v.readyState >= 1) seek();
    else v.addEventListener("loadedmetadata", seek, { once: true });
    return () => v.removeEventListener("loadedmetadata", seek);
  }, [at, url]);

  const title = `Recording of screen ${span.screen}, from ${clock(span.started_at_ms)}${span.stopped_at_ms ? ` to ${clock(span.stopped_at_ms)}` : ""} UTC`;
  return (
    <figure aria-label="Recording" className="space-y-2 rounded-lg border border-slate-200 p-3">
      <figcaption className="flex flex-wrap items-center justify-between gap-2 text-xs text-slate-600">
        <span>{title}</span>
        {url ? (
          <a href={url} download={`recording-${span.id}.mp4`} className="font-medium text-indigo-700 hover:underline">
            Download the recording
          </a>
        ) : null}
      </figcaption>
      {url ? (
        // Recordings have no sound and no captions: they are the screen as the trace's frames show it.
        <video ref={video} src={url} controls preload="metadata" playsInline className="w-full rounded bg-black" aria-label={title}>
          <track kind="captions" />
        </video>
      ) : (
        <p className="text-sm text-slate-600">
          {span.to === null ? "Still recording: the video can be played here once the recording stops." : "This recording was not kept in the trace (see its entry)."}
        </p>
      )}
    </figure>
  );
}
