import { randomBytes } from "node:crypto";
import { roundRobinProxy, testRedisUrl } from "../tests/support/cluster";
import { createTestDatabase, databaseUrl, dropTestDatabases } from "../tests/support/postgres";
import { RUN_LABEL, type TestServer, freePort, json, removeTestBoxes, startServer } from "../tests/support/server";
import { now, summarize } from "./stats";

// Issue 17: 50 agents at once against two servers behind a round-robin proxy (PostgreSQL and
// Redis shared), for BENCH_CLUSTER_SECS (default 300). The anchor, in the same run: the same
// agents for BENCH_CLUSTER_ANCHOR_SECS (default 30) against one of the two servers alone.
// Each agent sends one-step batches (`move`) to one of BENCH_CLUSTER_BOXES boxes (default 10),
// so about five agents share each screen and queue there, as agents sharing a box would.

const AGENTS = Number(process.env.BENCH_CLUSTER_AGENTS ?? 50);
const SECS = Number(process.env.BENCH_CLUSTER_SECS ?? 300);
const ANCHOR_SECS = Number(process.env.BENCH_CLUSTER_ANCHOR_SECS ?? 30);
const BOXES = Number(process.env.BENCH_CLUSTER_BOXES ?? 10);

interface Load {
  samples: number[];
  errors: Map<string, number>;
}

async function load(base: string, token: string, boxes: string[], secs: number): Promise<Load> {
  const out: Load = { samples: [], errors: new Map() };
  const stopAt = Date.now() + secs * 1000;
  await Promise.all(
    Array.from({ length: AGENTS }, async (_, i) => {
      const box = boxes[i % boxes.length]!;
      for (let j = 0; Date.now() < stopAt; j++) {
        const t0 = now();
        let status = 0;
        try {
          const res = await fetch(`${base}/v1/boxes/${box}/screens/0/actions`, {
            method: "POST",
            headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
            body: JSON.stringify({ actions: [{ type: "move", to: { x: 100 + (i % 40) * 20, y: 100 + (j % 500) } }] }),
          });
          await res.arrayBuffer();
          status = res.status;
        } catch (err) {
          out.errors.set(String(err), (out.errors.get(String(err)) ?? 0) + 1);
          continue;
        }
        if (status === 200) out.samples.push(now() - t0);
        else out.errors.set(String(status), (out.errors.get(String(status)) ?? 0) + 1);
      }
    }),
  );
  return out;
}

function report(name: string, l: Load, secs: number) {
  const s = summarize(name, l.samples);
  const errors = [...l.errors.values()].reduce((a, b) => a + b, 0);
  console.log(`  ${(l.samples.length / secs).toFixed(0)} batches/s, ${errors} errors${errors ? ` (${[...l.errors].map(([k, v]) => `${k}×${v}`).join(", ")})` : ""}`);
  return s;
}

export async function benchCluster() {
  const redis = testRedisUrl();
  if (!redis) throw new Error("no Redis: run HOLM_TEST_REDIS=1 bash scripts/setup.sh");
  const database = await createTestDatabase(RUN_LABEL);
  const servers: TestServer[] = [];
  const proxyPort = await freePort();
  const token = randomBytes(24).toString("hex");
  const shared = {
    HOLM_STORAGE_BACKEND: "postgres",
    HOLM_DATABASE_URL: databaseUrl(database),
    HOLM_REDIS_URL: redis,
    HOLM_SECRET_KEY: randomBytes(32).toString("hex"),
    HOLM_SERVER_TOKEN: token,
    HOLM_PUBLIC_URL: `http://127.0.0.1:${proxyPort}`,
  };
  const proxyOf = async () => roundRobinProxy(proxyPort, servers.map((s) => s.base));
  let proxy: Awaited<ReturnType<typeof proxyOf>> | undefined;
  try {
    servers.push(await startServer(shared));
    servers.push(await startServer(shared));
    proxy = await proxyOf();
    const boxes: string[] = [];
    for (let i = 0; i < BOXES; i++) {
      const box = await json(await servers[i % 2]!.api("/v1/boxes", { method: "POST", json: {} }));
      if (box.state !== "ready") throw new Error(`box ${i}: ${JSON.stringify(box)}`);
      boxes.push(box.id);
    }
    console.log(`${AGENTS} agents, ${BOXES} boxes (one screen each), one-step batches`);
    const one = report(`one server, ${ANCHOR_SECS} s (anchor)`, await load(servers[0]!.base, token, boxes, ANCHOR_SECS), ANCHOR_SECS);
    const two = report(`two servers behind the proxy, ${SECS} s`, await load(proxy.base, token, boxes, SECS), SECS);
    console.log(`  median ${(two.median / one.median).toFixed(2)}× one server's, p95 ${(two.p95 / one.p95).toFixed(2)}×; goal: 0 errors, p95 reported`);
  } finally {
    await proxy?.close();
    await Promise.all(servers.map((s) => s.stop()));
    await removeTestBoxes();
    await dropTestDatabases([database]);
  }
}
