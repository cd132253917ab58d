import { vncResponder } from "../tests/support/box-auth";
import { Page, boxIp } from "../tests/support/cdp";
import { type TestServer, json, removeTestBoxes, startServer } from "../tests/support/server";
import { RfbClient, viewerTicket } from "./rfb-client";
import { now, summarize } from "./stats";

// The viewer relay (/v1/…/viewer/socket) against a direct TCP connection to the box's x11vnc, in
// the same run, on the same box: latency of a full FramebufferUpdateRequest to the first byte of
// its update, throughput of full updates of a changing screen with each update's first byte →
// last byte (the path's own cost, apart from x11vnc's cycle: ADR 0031), and ticket → first update.

// ---------------------------------------------------------------- the bench

const N = Number(process.env.BENCH_N ?? 50);
/**
 * Samples per side of the full-update latency. x11vnc answers on its own cycle, so one sample falls
 * anywhere in 0–60 ms: the median of 50 moves by ±4 ms from run to run (1.01–1.19× in runs of
 * one build), more than the goal's 10 % of 43 ms. 200 make that ±2 ms, for 40 s more.
 */
const N_LATENCY = Number(process.env.BENCH_N_LATENCY ?? Math.max(N, 200));

// A full-screen canvas repainted every frame, so every full update is new pixels.
const CHANGING = `<!doctype html><html><body style="margin:0;overflow:hidden">
<canvas id="c"></canvas><script>
const c = document.getElementById("c"); c.width = innerWidth; c.height = innerHeight;
const g = c.getContext("2d"); let n = 0;
(function draw() { n++;
  for (let i = 0; i < 40; i++) { g.fillStyle = "hsl(" + ((n * 7 + i * 9) % 360) + ",70%," + (30 + (i * 13 + n) % 40) + "%)";
    g.fillRect((i * 97 + n * 13) % innerWidth, (i * 53 + n * 7) % innerHeight, 300, 200); }
  requestAnimationFrame(draw); })();
</script></body></html>`;

const order = (): ("direct" | "relay")[] => (Math.random() < 0.5 ? ["direct", "relay"] : ["relay", "direct"]);

async function connectPair(server: TestServer, boxId: string, ip: string) {
  // Straight to x11vnc, which asks for the box's password as it does of the relay.
  const direct = await RfbClient.overTcp(ip, 5900);
  await direct.handshake(1, vncResponder(server, boxId));
  const t = await viewerTicket(server, boxId, 0, { mode: "view" });
  const relay = await RfbClient.overWebSocket(t.view_socket);
  await relay.handshake();
  return { direct, relay };
}

export async function benchViewer() {
  const server = await startServer();
  try {
    const box = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
    if (box.state !== "ready") throw new Error(`box did not start: ${JSON.stringify(box)}`);
    const ip = await boxIp(box.id);
    const page = await Page.open(server, box.id);
    const { direct, relay } = await connectPair(server, box.id, ip);
    const { width, height } = relay.init;
    console.log(`screen ${width}×${height}, ${relay.init.bpp} bpp, raw encoding`);

    // Latency on a still screen: a full request to the first byte of its update.
    await page.navigate("about:blank");
    await new Promise((r) => setTimeout(r, 500));
    const latency = { direct: [] as number[], relay: [] as number[] };
    // x11vnc answers on its own poll cycle: a random pause before each request keeps either side
    // from locking onto one phase of it.
    const once = async (c: RfbClient, w = width, h = height) => {
      await new Promise((r) => setTimeout(r, Math.random() * 60));
      const t0 = now();
      c.requestUpdate(false, 0, 0, w, h);
      const u = await c.nextUpdate();
      return u.firstByteAt - t0;
    };
    for (let i = 0; i < 5; i++) {
      await once(direct);
      await once(relay);
    }
    for (let i = 0; i < N_LATENCY; i++) {
      // Both in each round, in a random order: drift in the box's load, and x11vnc's state after
      // the other client's update, fall on both sides alike.
      for (const side of order()) latency[side].push(await once(side === "direct" ? direct : relay));
    }
    const ld = summarize("full update request → first byte, direct TCP", latency.direct);
    const lr = summarize("full update request → first byte, relay (ws)", latency.relay);
    const lRatio = lr.median / ld.median;
    console.log(`  latency ratio relay/direct ${lRatio.toFixed(2)}× (target ≤ 1.1×: ${lRatio <= 1.1 ? "met" : "missed"}; +${(lr.median - ld.median).toFixed(2)} ms)`);

    // The relay's own round trip: a 64×64 request, which x11vnc answers at once.
    const small = { direct: [] as number[], relay: [] as number[] };
    for (let i = 0; i < N; i++) {
      for (const side of order()) small[side].push(await once(side === "direct" ? direct : relay, 64, 64));
    }
    const sd = summarize("64×64 update request → first byte, direct TCP", small.direct);
    const sr = summarize("64×64 update request → first byte, relay (ws)", small.relay);
    console.log(`  the relay adds ${(sr.median - sd.median).toFixed(2)} ms to a round trip (median)`);

    // Throughput on a changing screen: back-to-back full, non-incremental updates.
    await page.navigate(`data:text/html;base64,${Buffer.from(CHANGING).toString("base64")}`);
    await new Promise((r) => setTimeout(r, 1500));
    const rate = { direct: [] as number[], relay: [] as number[] };
    // Each full update's first byte to its last: the part of its time the path itself sets.
    const transfer = new Map<RfbClient, number[]>([
      [direct, []],
      [relay, []],
    ]);
    const burst = async (c: RfbClient, n: number) => {
      const t0 = now();
      let bytes = 0;
      for (let i = 0; i < n; i++) {
        c.requestUpdate(false);
        const u = await c.nextUpdate();
        transfer.get(c)!.push(now() - u.firstByteAt);
        bytes += u.bytes;
      }
      return bytes / 1e6 / ((now() - t0) / 1000);
    };
    await burst(direct, 3);
    await burst(relay, 3);
    // x11vnc sends a full update once a cycle (20–26 ms here, at 13–21 % of a core): a burst's
    // rate is set by where its requests fall in that cycle, and a side can lock onto a bad phase for
    // a whole burst (one run of 20 bursts: direct 220 MB/s, relay 153; in 3 s runs taking turns
    // both gave 150–190). 40 bursts a side; the page is given 1.5 s to settle first (x11vnc
    // stalled 2–4 s in the first seconds of the animation).
    for (let i = 0; i < Math.max(40, Math.round(N / 5)); i++) {
      for (const side of order()) rate[side].push(await burst(side === "direct" ? direct : relay, 5));
    }
    const td = summarize("full updates of a changing screen, direct TCP", rate.direct, "MB/s");
    const tr = summarize("full updates of a changing screen, relay (ws)", rate.relay, "MB/s");
    const tRatio = tr.median / td.median;
    console.log(`  throughput ratio relay/direct ${tRatio.toFixed(2)}× (target ≥ 0.9×: ${tRatio >= 0.9 ? "met" : "missed"})`);
    const xd = summarize("a full update, first byte → last, direct TCP", transfer.get(direct)!);
    const xr = summarize("a full update, first byte → last, relay (ws)", transfer.get(relay)!);
    console.log(`  the relay adds ${(xr.median - xd.median).toFixed(2)} ms to a ${((width * height * 4) / 1e6).toFixed(1)} MB update (median)`);
    direct.close();
    relay.close();

    // Ticket → first full framebuffer update, through the relay, from nothing.
    const first: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t0 = now();
      const t = await viewerTicket(server, box.id, 0, { mode: "view" });
      const c = await RfbClient.overWebSocket(t.view_socket);
      await c.handshake();
      c.requestUpdate(false);
      await c.nextUpdate();
      first.push(now() - t0);
      c.close();
      await c.closed;
    }
    const f = summarize("ticket → first full update (relay)", first);
    console.log(`  target median ≤ 500 ms (${f.median <= 500 ? "met" : "missed"})`);
    page.close();
  } finally {
    await server.stop();
    await removeTestBoxes();
  }
}
