import { Page } from "../tests/support/cdp";
import { json, removeTestBoxes, startServer } from "../tests/support/server";
import { now, summarize } from "./stats";
import { RfbClient, viewerTicket } from "./rfb-client";

// Does watching cost the agent? One-click batches on a box whose screen repaints at 10 Hz, in
// rounds that take turns: no viewer asking, then 20 view-mode viewers pulling incremental
// updates through the relay. Goal: the median rises ≤ 10 %.

const VIEWERS = Number(process.env.BENCH_VIEWERS ?? 20);
const N = Number(process.env.BENCH_N ?? 60);

const CHANGING = `<!doctype html><html><body style="margin:0"><div id="b" style="width:100vw;height:100vh"></div>
<script>let n = 0; setInterval(() => { n++; b.style.background = "hsl(" + (n * 37) % 360 + ",60%,50%)"; }, 100);</script></body></html>`;

export async function benchViewersLoad() {
  const server = await startServer();
  const clients: RfbClient[] = [];
  let stop = false;
  try {
    const box = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
    const page = await Page.open(server, box.id);
    await page.navigate(`data:text/html;base64,${Buffer.from(CHANGING).toString("base64")}`);
    page.close();
    const click = () =>
      server.api(`/v1/boxes/${box.id}/screens/0/actions`, { method: "POST", json: { actions: [{ type: "click", at: { x: 5, y: 5 } }] } }).then((r) => r.arrayBuffer());
    const time = async (n: number) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) {
        const t0 = now();
        await click();
        out.push(now() - t0);
      }
      return out;
    };
    for (let i = 0; i < 5; i++) await click();

    // The viewers connect once; between rounds they stop asking for updates (x11vnc then sends
    // them nothing), so the rounds with and without watching take turns on the same box and the
    // machine's drift falls on both alike.
    let watching = false;
    let updates = 0;
    const wake: (() => void)[] = [];
    for (let i = 0; i < VIEWERS; i++) {
      const t = await viewerTicket(server, box.id, 0, { mode: "view" });
      const c = await RfbClient.overWebSocket(t.view_socket);
      // ZRLE, then raw: compressed updates, as noVNC asks for (raw would be 4 MB per viewer per
      // repaint, 800 MB/s for 20 viewers at 10 Hz: no viewer in use costs that).
      await c.handshake(1, undefined, [16, 0]);
      clients.push(c);
      // While watching, each viewer keeps asking for what changed, as noVNC does.
      void (async () => {
        let first = true;
        while (!stop) {
          if (!watching) await new Promise<void>((r) => wake.push(r));
          if (stop) break;
          c.requestUpdate(!first);
          first = false;
          await c.nextUpdate();
          updates++;
        }
      })().catch(() => undefined);
    }
    const watch = async (on: boolean) => {
      watching = on;
      if (on) for (const w of wake.splice(0)) w();
      // Let the viewers catch up (or drain) before the round is timed.
      await new Promise((r) => setTimeout(r, on ? 1000 : 300));
    };
    const alone: number[] = [];
    const watched: number[] = [];
    const ROUNDS = 6;
    let watchedMs = 0;
    let watchedUpdates = 0;
    for (let r = 0; r < ROUNDS; r++) {
      await watch(false);
      alone.push(...(await time(Math.ceil(N / ROUNDS))));
      await watch(true);
      const u0 = updates;
      const t0 = now();
      watched.push(...(await time(Math.ceil(N / ROUNDS))));
      watchedMs += now() - t0;
      watchedUpdates += updates - u0;
    }
    await watch(false);
    const a = summarize("click batch, no viewers", alone);
    const w = summarize(`click batch, ${VIEWERS} viewers watching`, watched);
    console.log(`  viewers got ${(watchedUpdates / VIEWERS / (watchedMs / 1000)).toFixed(1)} updates/s each while watching (the screen repaints at 10 Hz)`);
    const rise = ((w.median - a.median) / a.median) * 100;
    console.log(`  median rises ${rise.toFixed(1)} % (target ≤ 10 %: ${rise <= 10 ? "met" : "missed"})`);
  } finally {
    stop = true;
    for (const c of clients) c.close();
    await server.stop();
    await removeTestBoxes();
  }
}
