import { startRemoteEngine } from "../tests/support/remote-engine";
import { startSshd } from "../tests/support/ssh-engine";
import { RUN_LABEL, json, removeTestBoxes, startServer } from "../tests/support/server";
import { now, summarize } from "./stats";
import { RfbClient, viewerTicket } from "./rfb-client";

// A box on another engine (ADR 0019: every TCP connection is a docker exec tunnel) against a
// local box in the same run: a click batch, a click batch with a frame, and the viewer's first
// frame. The engine is a second dockerd in a network namespace (tests/support/remote-engine.ts),
// reached two ways: tcp:// with TLS (`far`) and ssh:// (`far-ssh`, an sshd in that namespace).

const N = Number(process.env.BENCH_N ?? 40);

export async function benchRemote() {
  const engine = await startRemoteEngine(`bench-${RUN_LABEL}`);
  const sshd = await startSshd(engine).catch(async (err) => {
    await engine.stop();
    throw err;
  });
  const server = await startServer();
  try {
    for (const body of [
      { name: "far", provider: "docker", fields: { host: engine.host }, secrets: engine.tls },
      { name: "far-ssh", provider: "docker", fields: { host: sshd.host, host_key: sshd.hostKey }, secrets: { ssh_key: sshd.key } },
    ]) {
      const added = await server.api("/v1/runtimes", { method: "POST", json: body });
      if (added.status !== 200) throw new Error(`runtime: ${added.status} ${await added.text()}`);
    }
    // BENCH_IMAGE_OVER=ssh sends the image over ssh instead (tcp then finds it there).
    const over = process.env.BENCH_IMAGE_OVER === "ssh" ? ["far-ssh", "far"] : ["far", "far-ssh"];
    for (const rt of over) {
      const t0 = now();
      const image = await server.api(`/v1/runtimes/${rt}/image`, { method: "POST", json: { spec: {} } });
      if (image.status !== 200) throw new Error(`image: ${image.status} ${await image.text()}`);
      console.log(`image ensured on the far engine through ${rt} in ${((now() - t0) / 1000).toFixed(1)} s`);
    }
    const launch = async (placement: Record<string, unknown>) => {
      const t = now();
      const box = await json(await server.api("/v1/boxes", { method: "POST", json: { placement } }));
      if (box.state !== "ready") throw new Error(`launch: ${JSON.stringify(box)}`);
      return { box, ms: now() - t };
    };
    const local = await launch({});
    const far = await launch({ runtime: "far" });
    const farSsh = await launch({ runtime: "far-ssh" });
    console.log(`launch: local ${local.ms.toFixed(0)} ms, far ${far.ms.toFixed(0)} ms, far over ssh ${farSsh.ms.toFixed(0)} ms (image present)`);
    const sides = [
      ["local", local.box.id],
      ["far", far.box.id],
      ["far-ssh", farSsh.box.id],
    ] as const;
    type Samples = Record<(typeof sides)[number][0], number[]>;
    const empty = (): Samples => ({ local: [], far: [], "far-ssh": [] });

    const click = { type: "click", at: { x: 640, y: 450 } };
    const batch = async (id: string, want?: string[]) => {
      const res = await server.api(`/v1/boxes/${id}/screens/0/actions`, { method: "POST", json: { actions: [click], ...(want ? { want } : {}) } });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`batch: ${res.status}`);
    };
    // Interleaved, so both sides see the same machine load.
    const time = async (fn: (id: string) => Promise<unknown>) => {
      const out = empty();
      for (let i = 0; i < N + 3; i++) {
        for (const [side, id] of sides) {
          const t = now();
          await fn(id);
          if (i >= 3) out[side].push(now() - t);
        }
      }
      return out;
    };
    const report = (what: string, s: Samples) => {
      const l = summarize(`${what}, local engine`, s.local);
      for (const side of ["far", "far-ssh"] as const) {
        const f = summarize(`${what}, ${side === "far" ? "far engine (tcp)" : "far engine (ssh)"}`, s[side]);
        const ratio = f.median / l.median;
        console.log(`  ratio ${side}/local at the median ${ratio.toFixed(2)}× (goal ≤ 1.3×: ${ratio <= 1.3 ? "met" : "missed"}); p95 ${(f.p95 / l.p95).toFixed(2)}×`);
      }
    };
    report("click batch", await time((id) => batch(id)));
    report("click batch + frame", await time((id) => batch(id, ["frame"])));

    // The viewer: ticket → RFB handshake → first full update, each a new connection (a new tunnel).
    const first = empty();
    for (let i = 0; i < Math.min(N, 20) + 2; i++) {
      for (const [side, id] of sides) {
        const t = now();
        const ticket = await viewerTicket(server, id, 0, { mode: "view" });
        const c = await RfbClient.overWebSocket(ticket.view_socket);
        await c.handshake(1);
        c.requestUpdate(false);
        await c.nextUpdate();
        const ms = now() - t;
        c.close();
        if (i >= 2) first[side].push(ms);
      }
    }
    summarize("viewer ticket → first frame, local engine", first.local);
    for (const side of ["far", "far-ssh"] as const) {
      const f = summarize(`viewer ticket → first frame, ${side === "far" ? "far engine (tcp)" : "far engine (ssh)"}`, first[side]);
      console.log(`  goal ≤ 500 ms (${f.median <= 500 ? "met" : "missed"} at the median)`);
    }
  } finally {
    await server.stop();
    await sshd.stop();
    // Local boxes first: nothing below may keep them from going.
    console.log(`removed ${await removeTestBoxes()} local box(es) of this run`);
    for (const c of await engine.docker.listContainers({ all: true, filters: { label: [`holm.test=${RUN_LABEL}`] } }).catch(() => [])) {
      await engine.docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
    }
    await engine.stop();
  }
}
