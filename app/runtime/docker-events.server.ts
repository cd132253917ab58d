import type Docker from "dockerode";

/**
 * Calls `onExit` with the id of every container carrying `label` that ends or is removed (the
 * engine's `die` and `destroy` events: a `docker rm -f` is both, the removal a moment after the
 * exit), until the returned function is called. A broken event stream is opened again.
 */
export function watchDeaths(docker: Docker, label: string, onExit: (ref: string) => void): () => void {
  let stopped = false;
  let stream: NodeJS.ReadableStream | undefined;
  let retry: NodeJS.Timeout | undefined;
  const open = () => {
    if (stopped) return;
    docker
      .getEvents({ filters: { type: ["container"], event: ["die", "destroy"], label: [label] } })
      .then((s) => {
        if (stopped) return void (s as unknown as { destroy?: () => void }).destroy?.();
        stream = s;
        let buf = "";
        s.on("data", (d: Buffer) => {
          buf += d.toString("utf8");
          let nl: number;
          while ((nl = buf.indexOf("\n")) >= 0) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            try {
              const ev = JSON.parse(line) as { id?: string; Actor?: { ID?: string } };
              const ref = ev.Actor?.ID ?? ev.id;
              if (ref) onExit(ref);
            } catch {
              /* not an event */
            }
          }
        });
        const again = () => {
          if (stream !== s) return; // "error" and "end" both come: opened again once
          stream = undefined;
          if (!stopped) retry = setTimeout(open, 2000).unref();
        };
        s.on("end", again);
        s.on("error", again);
      })
      .catch(() => {
        if (!stopped) retry = setTimeout(open, 5000).unref();
      });
  };
  open();
  return () => {
    stopped = true;
    clearTimeout(retry);
    (stream as unknown as { destroy?: () => void } | undefined)?.destroy?.();
  };
}
