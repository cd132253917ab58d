import { json, removeTestBoxes, startServer } from "../tests/support/server";
import { now, summarize } from "./stats";

// Wayland boxes (issue 18: a Wayland click batch and frame within 1.3× of X11 at the median, in
// the same run): one X11 box and one Wayland box on the same server, the same page in each, the
// same batches in turn: a one-click batch, and a click with a 1280×800 frame.
//   BENCH_N  samples per case and desktop (default 40)

const N = Number(process.env.BENCH_N ?? 40);
const PAGE = "data:text/html,<style>body{margin:0}button{position:absolute;left:100px;top:100px;width:200px;height:60px}</style><button onclick=\"document.body.style.background=document.body.style.background?'':'%23cde'\">x</button>";

export async function benchWayland() {
  const server = await startServer();
  try {
    const boxes: Record<string, string> = {};
    for (const server_ of ["x11", "wayland"] as const) {
      const box = await json(await server.api("/v1/boxes", { method: "POST", json: { spec: { desktop: { server: server_ } } } }));
      if (box.state !== "ready") throw new Error(`${server_} box not ready: ${box.reason ?? box.message}`);
      boxes[server_] = box.id;
      await server.api(`/v1/boxes/${box.id}/screens/0/actions`, { method: "POST", json: { actions: [{ type: "open_url", url: PAGE, target: "current" }, { type: "wait", ms: 500 }] } });
    }
    const batch = async (id: string, body: unknown) => {
      const res = await server.api(`/v1/boxes/${id}/screens/0/actions`, { method: "POST", json: body });
      const out = await json(res);
      if (res.status !== 200 || out.results.some((r: { ok: boolean }) => !r.ok)) throw new Error(`batch: ${res.status} ${JSON.stringify(out).slice(0, 300)}`);
    };
    const click = { actions: [{ type: "click", at: { x: 200, y: 130 } }] };
    const clickFrame = { ...click, want: ["frame"] };
    const cases: [string, unknown][] = [["one-click batch", click], ["click + 1280×800 frame", clickFrame]];
    for (const [what, body] of cases) {
      const samples: Record<string, number[]> = { x11: [], wayland: [] };
      for (const d of ["x11", "wayland"]) for (let i = 0; i < 3; i++) await batch(boxes[d]!, body);
      // Interleaved, so both desktops see the same machine.
      for (let i = 0; i < N; i++) {
        for (const d of ["x11", "wayland"]) {
          const t0 = now();
          await batch(boxes[d]!, body);
          samples[d]!.push(now() - t0);
        }
      }
      const x = summarize(`${what}, X11 (anchor)`, samples.x11!);
      const w = summarize(`${what}, Wayland`, samples.wayland!);
      const ratio = w.median / x.median;
      console.log(`  ${what}: Wayland ${ratio.toFixed(2)}× X11 at the median (goal ≤ 1.3×: ${ratio <= 1.3 ? "met" : "missed"})`);
    }
  } finally {
    await server.stop();
    await removeTestBoxes();
  }
}
