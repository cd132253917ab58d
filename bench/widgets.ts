import { json, removeTestBoxes, startServer } from "../tests/support/server";
import { now, summarize } from "./stats";

// Native widgets (issue 18: `on_node find` p50 ≤ 50 ms on a GTK dialog): find a zenity dialog's
// field by its label through POST …/desktop/node, beside the anchor of the same run: a
// one-step `cursor` batch, the cheapest call into the same box.
//   BENCH_N  samples per case (default 40)

const N = Number(process.env.BENCH_N ?? 40);
const SPEC = {
  desktop: { features: ["accessibility"] },
  apps: { address: { packages: ["zenity"], argv: ["zenity", "--entry", "--title", "Address", "--text", "Street"], window_class: "Zenity" } },
};

export async function benchWidgets() {
  const server = await startServer();
  try {
    const box = await json(await server.api("/v1/boxes", { method: "POST", json: { spec: SPEC } }));
    if (box.state !== "ready") throw new Error(`box not ready: ${box.reason}`);
    const batch = (actions: unknown[]) => server.api(`/v1/boxes/${box.id}/screens/0/actions`, { method: "POST", json: { actions } }).then(json);
    await batch([{ type: "launch", app: "address" }, { type: "await_window", what: { class: "Zenity", within_ms: 20_000 } }]);
    const find = async () => {
      const res = await server.api(`/v1/boxes/${box.id}/screens/0/desktop/node`, { method: "POST", json: { op: "find", node: { query: "Street", role: "text" } } });
      const out = await json(res);
      if (res.status !== 200 || out.total !== 1) throw new Error(`find: ${res.status} ${JSON.stringify(out).slice(0, 200)}`);
    };
    for (let i = 0; i < 30; i++) {
      try {
        await find();
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    const time = async (fn: () => Promise<unknown>) => {
      const out: number[] = [];
      for (let i = 0; i < 3; i++) await fn();
      for (let i = 0; i < N; i++) {
        const t0 = now();
        await fn();
        out.push(now() - t0);
      }
      return out;
    };
    const f = summarize("on_node find, GTK dialog (zenity)", await time(find));
    const a = summarize("anchor: one-step cursor batch, same box", await time(() => batch([{ type: "cursor" }])));
    console.log(`  find median ${f.median.toFixed(1)} ms (goal ≤ 50 ms: ${f.median <= 50 ? "met" : "missed"}); ${(f.median / a.median).toFixed(1)}× the anchor`);
    await server.api(`/v1/boxes/${box.id}`, { method: "DELETE" });
  } finally {
    await server.stop();
    await removeTestBoxes();
  }
}
