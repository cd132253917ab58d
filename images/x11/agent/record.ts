// Screen recording with ffmpeg, one recording per screen, into a file in the box: x11grab on X11;
// on Wayland the agent feeds it wayvnc's frames (the ones `capture` uses) at the asked rate.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { Screen } from "./screen";
import { AgentError } from "./errors";
import { which } from "./util";
import { childEnv } from "./proc";
import type { RecordState } from "../../../app/protocol/agent";
import type { WaylandDesk } from "./wayland";
import type { Writable } from "node:stream";

/**
 * Writes frames into `sink` at `fps` of wall time: the newest one captured, again if the next is not
 * in yet. The video keeps the clock's pace even when ffmpeg falls behind (a loaded machine): the
 * frames owed are written once it has room, and at `stop` before the input ends, so the file's
 * length is the recording's wall time. A repeated frame is the same Buffer queued again, so a
 * backlog costs little memory. `capture` may copy into the spare buffer it is given: one whose
 * writes are all done, so no write still reads it.
 */
function feedFrames(sink: Writable, capture: (spare?: Buffer) => Promise<Buffer>, fps: number): { stop(): void; readonly firstAt: number; readonly first: Promise<void> } {
  let latest: Buffer | null = null;
  let wroteFirst: () => void = () => {};
  const first = new Promise<void>((resolve) => (wroteFirst = resolve));
  let inFlight = false;
  let stopped = false;
  let firstAt = 0;
  let written = 0;
  // Writes not yet done, per buffer; and buffers no write holds and that are not `latest`.
  const held = new Map<Buffer, number>();
  const spares: Buffer[] = [];
  const unused = (b: Buffer) => {
    if (b !== latest && !held.has(b) && spares.length < 2 && !spares.includes(b)) spares.push(b);
  };
  const done = (b: Buffer) => {
    const n = (held.get(b) ?? 1) - 1;
    if (n > 0) held.set(b, n);
    else held.delete(b), unused(b);
  };
  sink.on("error", () => undefined);
  const grab = () => {
    if (inFlight || stopped) return;
    inFlight = true;
    const spare = spares.pop();
    capture(spare).then(
      (px) => {
        const was = latest;
        latest = px;
        if (was && was !== px) unused(was);
        if (spare && spare !== px) unused(spare);
      },
      () => undefined,
    ).finally(() => (inFlight = false));
  };
  const owed = () => (firstAt ? Math.floor(((Date.now() - firstAt) * fps) / 1000) + 1 - written : 1);
  const pump = (limit: number) => {
    if (!latest) return;
    if (!firstAt) {
      firstAt = Date.now();
      wroteFirst();
    }
    for (let n = owed(); n > 0 && sink.writableLength < limit; n--, written++) {
      const b = latest;
      held.set(b, (held.get(b) ?? 0) + 1);
      sink.write(b, () => done(b));
    }
  };
  grab();
  const timer = setInterval(() => {
    grab();
    // Behind (ffmpeg not keeping up): hold back past a few frames' worth; the next tick pays.
    if (latest) pump(latest.length * 4);
  }, 1000 / fps);
  return {
    /** When the video's first frame was written (its time 0); 0 before. */
    get firstAt() {
      return firstAt;
    },
    /** Resolves once the first frame is written. */
    first,
    stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      pump(Infinity);
      sink.end();
    },
  };
}

/**
 * x264's threads: one up to 1920×1080 at 30 fps, else as many as it picks. Its sliced threads
 * cost more than they save on a desktop's frames: ffmpeg fed a 1280×800 page that animates at
 * 10 fps took 7.0 % of a core with its default threads and 5.8 % with one (a Wayland box, the
 * same run). One thread encodes such a frame in about 6 ms, so 1080p at 30 fps still leaves half
 * a core spare; a larger or faster recording gets more threads rather than fall behind.
 */
export function encoderThreads(width: number, height: number, fps: number): string {
  return width * height * fps <= 1920 * 1080 * 30 ? "1" : "0";
}

export async function startRecording(screen: Screen, fps: number): Promise<RecordState> {
  if (screen.recording) throw new AgentError("failed", `screen ${screen.index} is already recording to ${screen.recording.path}`);
  const ffmpeg = which("ffmpeg");
  if (!ffmpeg) throw new AgentError("unsupported", "ffmpeg is not installed in this box (the video feature adds it)");
  const s = screen.isWayland ? await screen.wayland() : await screen.session();
  const dir = screen.config.recordingsDir;
  fs.mkdirSync(dir, { recursive: true });
  const startedAt = Date.now();
  const file = path.join(dir, `screen-${screen.index}-${startedAt}.mp4`);
  // Fed from here (Wayland), the frames are YUV 4:2:0 already, converted by the agent where the
  // screen changed (yuv420.ts): 1.5 MB a frame on ffmpeg's stdin instead of 4, and no conversion
  // in ffmpeg. x264 needs even sides for 4:2:0; a screen with an odd one is fed BGRX rows.
  const yuv = screen.isWayland && s.width % 2 === 0 && s.height % 2 === 0;
  const input = screen.isWayland
    ? // Raw frames on stdin, one every 1/fps s of wall time (wayvnc draws the pointer in).
      ["-f", "rawvideo", "-pixel_format", yuv ? "yuv420p" : "bgr0", "-video_size", `${s.width}x${s.height}`, "-framerate", String(fps), "-i", "pipe:0"]
    : ["-nostdin", "-f", "x11grab", "-draw_mouse", "1", "-framerate", String(fps), "-video_size", `${s.width}x${s.height}`, "-i", screen.display];
  const args = [
    // Progress on stdout: the start step answers once the first frame is in (not when ffmpeg has
    // merely been spawned: on a busy box it takes a second or more to grab its first).
    "-hide_banner", "-loglevel", "error", "-progress", "pipe:1", "-stats_period", "0.1", ...input,
    // zerolatency (no lookahead, no B-frames) and nearest-neighbour chroma subsampling: a 1280×800
    // box at 10 fps went from 12 % of a core to under 10 % (bench/recording.ts; the colour
    // conversion was the larger half of ffmpeg's time). A desktop's flat colours lose nothing seen.
    // One encoder thread where one keeps up (encoderThreads).
    "-c:v", "libx264", "-threads", encoderThreads(s.width, s.height, fps), "-preset", "ultrafast", "-tune", "zerolatency", "-sws_flags", "neighbor", "-pix_fmt", "yuv420p",
    "-movflags", "+faststart", "-y", file,
  ];
  // On Wayland, frames from a session that follows the screen with incremental updates: a still
  // screen costs wayvnc nothing, where asking for a whole 4 MB frame each time cost a third of a
  // core at 10 fps (bench/recording.ts).
  const follow = screen.isWayland ? await (s as WaylandDesk).followFrames(fps, { yuv }) : null;
  const child = spawn(ffmpeg, args, { env: childEnv(screen.display), stdio: [screen.isWayland ? "pipe" : "ignore", "pipe", "pipe"], detached: true });
  const feeder = follow && child.stdin ? feedFrames(child.stdin, (spare) => follow.latest(5000, spare), fps) : null;
  let stderr = "";
  child.stderr?.on("data", (c: Buffer) => {
    stderr = (stderr + c.toString()).slice(-2000);
  });
  let firstFrame: () => void = () => {};
  const grabbing = new Promise<"grabbing">((resolve) => (firstFrame = () => resolve("grabbing")));
  let progress = "";
  // The video's length so far, from ffmpeg's progress (out_time_us, microseconds): at its end, the
  // length of the file it wrote. Under load the wall time between "first frame" and "stop" is not
  // it (a CI run: a 5.7 s video reported as 3.8 s): ffmpeg says its first frame late and grabs on
  // until it reads the signal.
  let videoUs: number | undefined;
  child.stdout?.on("data", (c: Buffer) => {
    progress = (progress + c.toString()).slice(-400);
    const m = /frame=(\d+)\s*$/m.exec(progress);
    if (m && Number(m[1]) > 0) firstFrame();
    for (const t of progress.matchAll(/^out_time_(?:us|ms)=(\d+)\s*$/gm)) videoUs = Number(t[1]);
  });
  // "close", not "exit": ffmpeg's last progress block (its whole length) may still be in the pipe at exit.
  const exited = new Promise<{ code: number | null }>((resolve) => child.on("close", (code) => resolve({ code })));
  exited.then(() => {
    feeder?.stop();
    follow?.close();
  });
  // ffmpeg fails fast on a bad display or codec; otherwise it says when its first frame is in.
  // Fed from here, the first frame is in when the feeder has written it.
  const inFirst = feeder ? feeder.first.then(() => "grabbing" as const) : grabbing;
  const early = await Promise.race([exited, inFirst, new Promise<"slow">((r) => setTimeout(() => r("slow"), 5000))]);
  if (typeof early === "object") {
    feeder?.stop();
    throw new AgentError("failed", `ffmpeg stopped at once (${early.code}): ${stderr.trim()}`);
  }
  // The video's time 0 is its first frame, not ffmpeg's spawn (half a second or more before on a
  // busy box): the trace places the video by this time (its started_at_ms).
  const firstFrameAt = early === "grabbing" ? Date.now() : startedAt;
  exited.then(() => {
    if (screen.recording?.path === file) screen.recording = null;
  });
  screen.recording = {
    path: file,
    fps,
    // Fed from here, time 0 is when the feeder wrote its first frame, whenever that was: ffmpeg's
    // progress line says so up to a second later (a CI run counted 36 frames in a "2,743 ms"
    // video at 10 fps), and a first capture slower than 5 s (another run: 45 frames in "8,353 ms")
    // came after the start answered.
    get startedAt() {
      return feeder?.firstAt || firstFrameAt;
    },
    async stop() {
      // SIGINT (or, fed from here, the end of its input) lets ffmpeg write the trailer; a file
      // without it does not play.
      if (feeder) feeder.stop();
      else child.kill("SIGINT");
      const t = setTimeout(() => child.kill("SIGKILL"), 5000);
      const r = await exited;
      clearTimeout(t);
      return { ...r, videoMs: videoUs === undefined ? undefined : Math.round(videoUs / 1000) };
    },
  };
  return { recording: true, path: file, fps, started_at_ms: screen.recording.startedAt };
}

export async function stopRecording(screen: Screen): Promise<RecordState> {
  const rec = screen.recording;
  if (!rec) throw new AgentError("failed", `screen ${screen.index} is not recording`);
  screen.recording = null;
  // The video ends now (the feeder's last frame, or ffmpeg's SIGINT), not when ffmpeg has
  // finished writing it, which on a busy box is a second or more later.
  const stoppedAt = Date.now();
  const { videoMs } = await rec.stop();
  let bytes = 0;
  try {
    bytes = fs.statSync(rec.path).size;
  } catch {
    // reported as 0 bytes
  }
  // The file's own length where ffmpeg said it (a file without frames says 0: the wall time then).
  const duration = videoMs && videoMs > 0 ? videoMs : stoppedAt - rec.startedAt;
  return { recording: false, path: rec.path, fps: rec.fps, started_at_ms: rec.startedAt, duration_ms: duration, bytes };
}

export function recordingStatus(screen: Screen): RecordState {
  const rec = screen.recording;
  if (!rec) return { recording: false };
  return { recording: true, path: rec.path, fps: rec.fps, started_at_ms: rec.startedAt, duration_ms: Date.now() - rec.startedAt };
}
