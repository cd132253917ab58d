import net from "node:net";
import { pack } from "tar-stream";
import { vncPasswdFile } from "../app/protocol/rfb/vnc-auth";
import { sign } from "../images/x11/agent/auth";
import { docker, json, removeTestBoxes, startServer } from "../tests/support/server";
import { now, summarize } from "./stats";

// POST /v1/boxes → ready, against a bare `docker run` of the same image to the point where X,
// VNC and CDP answer, in one run.

const RUNS = Number(process.env.BENCH_RUNS ?? 5);

function tcpAnswers(host: string, port: number, expect?: RegExp): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, host);
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(500, () => done(false));
    s.once("error", () => done(false));
    if (expect) s.once("data", (d) => done(expect.test(d.toString())));
    else s.once("connect", () => done(true));
  });
}

async function httpAnswers(url: string, headers: Record<string, string> = {}): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(500), headers });
    return res.ok;
  } catch {
    return false;
  }
}

const SECRET = "bench-agent-secret";

/** The secret files a box needs to boot (images/README.md), as the server writes them. */
async function secretFiles(): Promise<Buffer> {
  const p = pack();
  p.entry({ name: "etc/holm/", type: "directory", mode: 0o700 });
  p.entry({ name: "etc/holm/agent.secret", mode: 0o600 }, `${SECRET}\n`);
  p.entry({ name: "etc/holm/vnc.passwd", mode: 0o600 }, vncPasswdFile("bench-pw"));
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const c of p) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** docker run of the box image, until X (xdpyinfo via the agent's health), VNC and CDP answer. */
export async function rawStart(image: string): Promise<number> {
  const t0 = now();
  const c = await docker.createContainer({
    Image: image,
    Env: ["HOLM_SCREENS=1", "HOLM_WIDTH=1280", "HOLM_HEIGHT=800", "HOLM_BOX_ID=box_bench", "HOLM_FEATURES=accessibility,dock,video,wide_fonts"],
    Labels: { "holm.test": "bench" },
    HostConfig: { NetworkMode: "holm", ShmSize: 256 * 1024 ** 2 },
  });
  const files = await secretFiles();
  await c.start();
  // As the server does it: the secrets go in while the box boots.
  const put = c.putArchive(files, { path: "/" });
  const ip = (await c.inspect()).NetworkSettings.Networks.holm!.IPAddress;
  let x = false;
  let vnc = false;
  let cdp = false;
  while (!(x && vnc && cdp)) {
    if (!x) {
      const h = await fetch(`http://${ip}:7070/health`, { signal: AbortSignal.timeout(500) }).then((r) => r.json()).catch(() => undefined);
      x = !!h?.screens?.[0]?.x;
    }
    if (!vnc) vnc = await tcpAnswers(ip, 5900, /^RFB/);
    // DevTools through the agent's relay, signed (nothing else reaches it).
    if (!cdp) cdp = await httpAnswers(`http://${ip}:7070/screens/0/cdp/json/version`, { authorization: sign(SECRET, "GET", "/screens/0/cdp/json/version") });
    if (!(x && vnc && cdp)) await new Promise((r) => setTimeout(r, 20));
  }
  await put;
  const took = now() - t0;
  await c.remove({ force: true });
  return took;
}

export async function benchBoxStart() {
  const server = await startServer();
  try {
    // Warm: the image exists and the page cache holds it.
    const first = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
    const image = (await docker.getContainer(`holm-${first.id}`).inspect()).Config.Image;
    await server.api(`/v1/boxes/${first.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    const api: number[] = [];
    const raw: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      raw.push(await rawStart(image));
      const t0 = now();
      const box = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
      api.push(now() - t0);
      if (box.state !== "ready") throw new Error(`box did not start: ${JSON.stringify(box)}`);
      await server.api(`/v1/boxes/${box.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    }
    const a = summarize("POST /v1/boxes → ready", api);
    const r = summarize("docker run → X, VNC, CDP answer", raw);
    console.log(`ratio (median) ${(a.median / r.median).toFixed(2)}× (target ≤ 1.2×)`);
  } finally {
    await server.stop();
    await removeTestBoxes();
    await removeTestBoxes("bench");
  }
}
