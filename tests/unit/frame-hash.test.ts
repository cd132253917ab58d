import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { storeModules } from "../support/store-modules";

// Issue 10: frames are stored by content, and one box must not be able to plant a frame that
// shows in another box's trace. The attack goes through the real recording path: a box's agent
// answers a batch with a frame whose hash it made up (the one another box's screen will have),
// and the server records it; later the victim's real frame arrives under that hash.

type Recorder = typeof import("~/models/recorder.server");
type Trace = typeof import("~/models/trace.server");
const stores = storeModules("frames");

async function load(backend: "memory" | "local") {
  await stores.openStore(backend);
  const recorder: Recorder = await import("~/models/recorder.server");
  const trace: Trace = await import("~/models/trace.server");
  return { recorder, trace };
}

let n = 0;
const boxId = () => `box_${(0xb0000000 + ++n).toString(16)}${process.pid.toString(16).padStart(8, "0")}`;
const running = (id: string) => ({ id, address: "192.0.2.1", screens: 1 }) as never;

async function frameEntries(trace: Trace, id: string) {
  for (let i = 0; i < 100; i++) {
    const frames = (await trace.readTrace(id)).entries.filter((e) => e.event === "frame");
    if (frames.length) return frames;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no frame entry for ${id}`);
}

describe.each(["memory", "local"] as const)("frames by content (%s store)", (backend) => {
  it("a frame a box reports under another box's hash never shows in that box's trace", async () => {
    const { recorder, trace } = await load(backend);
    const attacker = boxId();
    const victim = boxId();
    const real = Buffer.from("\x89PNG the victim's real screen");
    const planted = Buffer.from("\x89PNG a screen the attacker drew");
    // What the victim's agent will report for its screen (a blank desktop is easy to predict).
    const predicted = createHash("sha1").update("pixels of a blank 1280x800 desktop").digest("hex");

    await recorder.recordBatch({ kind: "server", via: "token" }, running(attacker), 0, [], [], { hash: predicted, png_base64: planted.toString("base64") });
    await frameEntries(trace, attacker);
    await recorder.recordBatch({ kind: "server", via: "token" }, running(victim), 0, [], [], { hash: predicted, png_base64: real.toString("base64") });
    const [entry] = await frameEntries(trace, victim);

    expect(await trace.readBoxFrame(victim, entry!.frame!)).toEqual(real);
    // The server's own hash of the bytes, not the box's word.
    expect(entry!.frame).toBe(createHash("sha256").update(real).digest("hex"));
    const [planted1] = await frameEntries(trace, attacker);
    expect(await trace.readBoxFrame(attacker, planted1!.frame!)).toEqual(planted);
    expect(await trace.readBoxFrame(victim, planted1!.frame!)).toBeUndefined();
  });
});
