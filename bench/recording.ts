import fs from "node:fs";
import { docker, json, removeTestBoxes, startServer } from "../tests/support/server";
import { summarize } from "./stats";

// What a screen recording costs its box (issue 18: ≤ 10 % of a core at 1280×800, 10 fps): the
// box's CPU (its container's cgroup, so ffmpeg and what it wakes in Xvfb alike) over windows of
// WINDOW_S seconds, with the same screen not recording (the anchor, in the same run) and
// recording at 10 fps; once with a still screen and once with a page that animates all the time.
// Then what the recording weighs per minute, as the trace keeps it. Both desktops, one after the
// other (BENCH_RECORDING_DESKTOPS, default "x11,wayland").
//   BENCH_RECORDING_WINDOWS  windows per case (default 6)   BENCH_RECORDING_WINDOW_S  (default 3)

const WINDOWS = Number(process.env.BENCH_RECORDING_WINDOWS ?? 6);
const WINDOW_S = Number(process.env.BENCH_RECORDING_WINDOW_S ?? 3);

const cpuNs = (id: string) => Number(fs.readFileSync(`/sys/fs/cgroup/cpuacct/docker/${id}/cpuacct.usage`, "utf8"));

/** % of one core the container used over one window of WINDOW_S seconds. */
async function window(id: string): Promise<number> {
  const c0 = cpuNs(id);
  const t0 = process.hrtime.bigint();
  await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
  return ((cpuNs(id) - c0) / Number(process.hrtime.bigint() - t0)) * 100;
}

const ANIMATED = `data:text/html;base64,${Buffer.from(
  `<!doctype html><style>body{margin:0;background:#eef}div{width:200px;height:200px;background:#c33;position:absolute;animation:m 2s linear infinite alternate}@keyframes m{from{left:0;top:0}to{left:1000px;top:500px}}</style><div></div>`,
).toString("base64")}`;
const STILL = `data:text/html;base64,${Buffer.from("<!doctype html><body style='background:#eef'><h1>Still</h1>").toString("base64")}`;

export async function benchRecording() {
  for (const desktop of (process.env.BENCH_RECORDING_DESKTOPS ?? "x11,wayland").split(",")) await benchRecordingOn(desktop.trim());
}

/** One desktop's box: X11's ffmpeg grabs the X server; Wayland's is fed wayvnc's frames by the agent. */
async function benchRecordingOn(desktop: string) {
  console.log(`recording on ${desktop}`);
  const server = await startServer();
  try {
    const spec = desktop === "x11" ? {} : { spec: { desktop: { server: desktop } } };
    const box = await json(await server.api("/v1/boxes", { method: "POST", json: spec }));
    if (box.state !== "ready") throw new Error(`box did not start: ${JSON.stringify(box)}`);
    const id = (await docker.getContainer(`holm-${box.id}`).inspect()).Id;
    const act = (actions: unknown[]) => server.api(`/v1/boxes/${box.id}/screens/0/actions`, { method: "POST", json: { actions } }).then(json);
    const rec = (method: "POST" | "DELETE") =>
      server.api(`/v1/boxes/${box.id}/screens/0/recording`, { method, ...(method === "POST" ? { json: { fps: 10 } } : {}) }).then(json);
    // Settle after the start (Chromium's first minute of background work).
    await act([{ type: "open_url", url: STILL, target: "current" }, { type: "wait", ms: 5000 }]);
    for (const [name, url] of [
      ["still screen", STILL],
      ["animated page", ANIMATED],
    ] as const) {
      await act([{ type: "open_url", url, target: "current" }, { type: "wait", ms: 2000 }]);
      // Windows not recording and recording take turns (a recording is started for each of its
      // windows and stopped after), so the page's own drift (an animated page's Chromium varied
      // 17–22 % of a core between runs) weighs on both alike. Starting and stopping are outside the
      // windows: a second after the start, half a second after the stop.
      const offs: number[] = [];
      const ons: number[] = [];
      const per: number[] = [];
      let bytes = 0;
      let ms = 0;
      for (let i = 0; i < WINDOWS; i++) {
        offs.push(await window(id));
        const started = await rec("POST");
        if (!started.recording) throw new Error(`recording did not start: ${JSON.stringify(started)}`);
        await new Promise((r) => setTimeout(r, 1000));
        ons.push(await window(id));
        per.push(ons.at(-1)! - offs.at(-1)!);
        const stopped = await rec("DELETE");
        bytes += stopped.bytes;
        ms += stopped.duration_ms;
        await new Promise((r) => setTimeout(r, 500));
      }
      const off = summarize(`${desktop}, ${name}: box CPU, not recording (anchor)`, offs, "%");
      const on = summarize(`${desktop}, ${name}: box CPU, recording 1280x800 @10 fps`, ons, "%");
      const cost = summarize(`${desktop}, ${name}: recording's cost, each recording window less the window before it`, per, "%");
      const stopped = { bytes, duration_ms: ms };
      console.log(
        `${desktop}, ${name}: recording costs ${cost.median.toFixed(1)} % of a core at the median of the pairs ` +
          `(${(on.median - off.median).toFixed(1)} % between the medians; goal ≤ 10 %); ` +
          `${(stopped.bytes / 1024 / 1024 / (stopped.duration_ms / 60_000)).toFixed(1)} MiB a minute (of ${WINDOW_S + 1} s recordings, each starting on a key frame)`,
      );
    }
  } finally {
    await server.stop();
    await removeTestBoxes();
  }
}
