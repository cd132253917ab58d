import { vncResponder } from "../tests/support/box-auth";
import { Page, boxIp } from "../tests/support/cdp";
import { type TestServer, json, removeTestBoxes, startServer } from "../tests/support/server";
import { RfbClient, viewerTicket } from "./rfb-client";
import { now, summarize } from "./stats";

// Does watching cost the agent? One-click batches on a box whose screen repaints at 10 Hz, in
// rounds that take turns: no viewer asking; 20 view-mode viewers pulling incremental updates
// through the relay; and, as the anchor, 20 viewers pulling them straight from the box's x11vnc
// (no server in their path). Goal: the relay's rounds raise the median ≤ 10 %. The direct rounds
// say how much of any rise is watching itself (x11vnc and the box) rather than the relay.
//
// 300 clicks a side by default: with 60 the median moved ±10 % from run to run, and each of a
// run's medians still moves a few per cent with 300 (the box's own timing, not the sample count).

const VIEWERS = Number(process.env.BENCH_VIEWERS ?? 20);
const N = Number(process.env.BENCH_N ?? 300);
const ROUNDS = 15;

const CHANGING = `<!doctype html><html><body style="margin:0"><div id="b" style="width:100vw;height:100vh"></div>
<script>let n = 0; setInterval(() => { n++; b.style.background = "hsl(" + (n * 37) % 360 + ",60%,50%)"; }, 100);</script></body></html>`;

type Side = "alone" | "relay" | "direct";

/** Viewers of one path, connected once; they ask for updates only while `watching`. */
class Watchers {
  clients: RfbClient[] = [];
  updates = 0;
  private watching = false;
  private stopped = false;
  private wake: (() => void)[] = [];

  add(c: RfbClient) {
    this.clients.push(c);
    // While watching, each viewer keeps asking for what changed, as noVNC does.
    void (async () => {
      let first = true;
      while (!this.stopped) {
        if (!this.watching) await new Promise<void>((r) => this.wake.push(r));
        if (this.stopped) break;
        c.requestUpdate(!first);
        first = false;
        await c.nextUpdate();
        this.updates++;
      }
    })().catch(() => undefined);
  }

  set(on: boolean) {
    this.watching = on;
    if (on) for (const w of this.wake.splice(0)) w();
  }

  stop() {
    this.stopped = true;
    for (const w of this.wake.splice(0)) w();
    for (const c of this.clients) c.close();
  }
}

async function connectViewers(server: TestServer, boxId: string, side: "relay" | "direct", into: Watchers) {
  const ip = side === "direct" ? await boxIp(boxId) : undefined;
  for (let i = 0; i < VIEWERS; i++) {
    // ZRLE, then raw: compressed updates, as noVNC asks for (raw would be 4 MB per viewer per
    // repaint, 800 MB/s for 20 viewers at 10 Hz: no viewer in use costs that).
    if (ip) {
      const c = await RfbClient.overTcp(ip, 5900);
      await c.handshake(1, vncResponder(server, boxId), [16, 0]);
      into.add(c);
    } else {
      const t = await viewerTicket(server, boxId, 0, { mode: "view" });
      const c = await RfbClient.overWebSocket(t.view_socket);
      await c.handshake(1, undefined, [16, 0]);
      into.add(c);
    }
  }
}

export async function benchViewersLoad() {
  const server = await startServer();
  const watchers = { relay: new Watchers(), direct: new Watchers() };
  try {
    const box = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
    const page = await Page.open(server, box.id);
    await page.navigate(`data:text/html;base64,${Buffer.from(CHANGING).toString("base64")}`);
    page.close();
    // The batch's time, and the part of it the server spent waiting on the box (Server-Timing).
    const click = async () => {
      const t0 = now();
      const r = await server.api(`/v1/boxes/${box.id}/screens/0/actions`, { method: "POST", json: { actions: [{ type: "click", at: { x: 5, y: 5 } }] } });
      await r.arrayBuffer();
      const total = now() - t0;
      const timing = r.headers.get("server-timing") ?? "";
      const dur = (name: string) => Number(new RegExp(`${name};dur=([0-9.]+)`).exec(timing)?.[1] ?? NaN);
      return { total, inBox: dur("box"), inServer: dur("app") };
    };
    for (let i = 0; i < 5; i++) await click();
    await connectViewers(server, box.id, "relay", watchers.relay);
    await connectViewers(server, box.id, "direct", watchers.direct);

    // The viewers connect once; between rounds they stop asking for updates (x11vnc then sends
    // them nothing), so the three kinds of round take turns on the same box and the machine's
    // drift falls on all alike.
    const samples: Record<Side, { total: number[]; inBox: number[]; inServer: number[]; ms: number; updates: number }> = {
      alone: { total: [], inBox: [], inServer: [], ms: 0, updates: 0 },
      relay: { total: [], inBox: [], inServer: [], ms: 0, updates: 0 },
      direct: { total: [], inBox: [], inServer: [], ms: 0, updates: 0 },
    };
    const perRound = Math.ceil(N / ROUNDS);
    const sides: Side[] = ["alone", "relay", "direct"];
    for (let r = 0; r < ROUNDS; r++) {
      // A different order each round: no kind of round always follows another.
      for (const side of [...sides].sort(() => Math.random() - 0.5)) {
        watchers.relay.set(side === "relay");
        watchers.direct.set(side === "direct");
        // Let the viewers catch up (or drain) before the round is timed.
        await new Promise((res) => setTimeout(res, side === "alone" ? 300 : 1000));
        const s = samples[side];
        const u0 = side === "alone" ? 0 : watchers[side].updates;
        const t0 = now();
        for (let i = 0; i < perRound; i++) {
          const { total, inBox, inServer } = await click();
          s.total.push(total);
          s.inBox.push(inBox);
          s.inServer.push(inServer);
        }
        s.ms += now() - t0;
        if (side !== "alone") s.updates += watchers[side].updates - u0;
      }
    }
    watchers.relay.set(false);
    watchers.direct.set(false);

    const label: Record<Side, string> = {
      alone: "click batch, no viewers",
      relay: `click batch, ${VIEWERS} viewers through the relay`,
      direct: `click batch, ${VIEWERS} viewers direct to x11vnc`,
    };
    const medians = {} as Record<Side, { total: number; inBox: number; inServer: number; outside: number }>;
    for (const side of sides) {
      const s = samples[side];
      const total = summarize(label[side], s.total).median;
      const inServer = summarize("  of which in the server (Server-Timing app)", s.inServer).median;
      const inBox = summarize("    of which waiting on the box (box)", s.inBox).median;
      // Outside the server: the HTTP round trip on loopback and the bench's own event loop, which
      // also runs the viewers' clients.
      const outside = summarize("  outside the server (total − app)", s.total.map((t, i) => t - s.inServer[i]!)).median;
      medians[side] = { total, inBox, inServer, outside };
      if (side !== "alone") console.log(`  viewers got ${(s.updates / VIEWERS / (s.ms / 1000)).toFixed(1)} updates/s each (the screen repaints at 10 Hz)`);
    }
    const rise = (side: Side) => ((medians[side].total - medians.alone.total) / medians.alone.total) * 100;
    const riseOf = (side: Side, part: "inBox" | "inServer" | "outside") => (medians[side][part] - medians.alone[part]).toFixed(2);
    const relay = rise("relay");
    console.log(
      `  median rises ${relay.toFixed(1)} % through the relay (target ≤ 10 %: ${relay <= 10 ? "met" : "missed"}), ` +
        `${rise("direct").toFixed(1)} % with viewers direct to x11vnc (anchor)`,
    );
    for (const side of ["relay", "direct"] as const) {
      console.log(`  ${side}: the box's share rises ${riseOf(side, "inBox")} ms, the server's whole time ${riseOf(side, "inServer")} ms, outside it ${riseOf(side, "outside")} ms`);
    }
  } finally {
    watchers.relay.stop();
    watchers.direct.stop();
    await server.stop();
    await removeTestBoxes();
  }
}
