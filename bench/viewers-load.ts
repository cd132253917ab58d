import { Page } from "../tests/support/cdp";
import { json, removeTestBoxes, startServer } from "../tests/support/server";
import { now, summarize } from "./stats";
import { RfbClient, viewerTicket } from "./viewer";

// Does watching cost the agent? Click batches on a box whose screen keeps changing, with no
// viewer and then with 20 view-mode viewers pulling incremental updates through the relay.

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
    const time = async () => {
      const out: number[] = [];
      for (let i = 0; i < 5; i++) await click();
      for (let i = 0; i < N; i++) {
        const t0 = now();
        await click();
        out.push(now() - t0);
      }
      return out;
    };
    const alone = summarize("click batch, no viewers", await time());

    for (let i = 0; i < VIEWERS; i++) {
      const t = await viewerTicket(server, box.id, 0, { mode: "view" });
      const c = await RfbClient.overWebSocket(t.view_socket);
      await c.handshake();
      clients.push(c);
      // Each viewer keeps asking for what changed, as noVNC does.
      void (async () => {
        c.requestUpdate(false);
        while (!stop) {
          await c.nextUpdate();
          c.requestUpdate(true);
        }
      })().catch(() => undefined);
    }
    await new Promise((r) => setTimeout(r, 2000));
    const watched = summarize(`click batch, ${VIEWERS} viewers watching`, await time());
    const rise = ((watched.median - alone.median) / alone.median) * 100;
    console.log(`  median rises ${rise.toFixed(1)} % (target ≤ 10 %)`);
  } finally {
    stop = true;
    for (const c of clients) c.close();
    await server.stop();
    await removeTestBoxes();
  }
}
