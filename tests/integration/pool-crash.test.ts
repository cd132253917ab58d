import { afterAll, expect, it } from "vitest";
import { type TestServer, RUN_LABEL, docker, removeTestBoxes, startServer } from "../support/server";
import { openStore } from "../support/store";
import { until } from "../support/until";

// The warm pool (ADR 0014) when its server is killed (-9) mid-refill, on the local store: the
// pool box being created is failed at the next boot and its container removed, whether or not the
// killed server had written the container's id down yet. The kill lands in that gap (the engine
// made the container, the row names none) one time in five to ten: the test tries until it does
// (up to 40 times, ~1.5 s each).

let server: TestServer | undefined;

afterAll(async () => {
  await server?.stop("SIGKILL");
  await removeTestBoxes();
});

const poolContainers = async () =>
  (await docker.listContainers({ all: true, filters: { label: [`holm.test=${RUN_LABEL}`, "holm.pool=1"] } })).map((c) => c.Labels["holm.box"]!);

it("kill -9 as a refill creates its container, then a restart without the pool: no pool container is left", async () => {
  let hit = false;
  for (let attempt = 1; attempt <= 40 && !hit; attempt++) {
    const events = await docker.getEvents({ filters: { type: ["container"], event: ["create"], label: [`holm.test=${RUN_LABEL}`, "holm.pool=1"] } });
    const s = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_POOL: "default=1", HOLM_POOL_MAX_MEMORY: "4g" }).catch((err) => {
      (events as unknown as { destroy(): void }).destroy();
      throw err;
    });
    server = s;
    // Killed the moment the engine says the container exists: before or just after the server
    // hears so (its row then names the container or not yet).
    try {
      await new Promise<void>((resolve) => events.once("data", () => void s.stop("SIGKILL").then(() => resolve())));
    } finally {
      (events as unknown as { destroy(): void }).destroy();
    }
    const store = openStore(s, { readonly: true });
    const rows = store.prepare("select id, runtime_ref from box where pooled = 1").all() as { id: string; runtime_ref: string | null }[];
    store.close();
    hit = rows.some((r) => r.runtime_ref === null);
    if (!hit) await removeTestBoxes();
    // Restarted without a pool (HOLM_POOL changed), reaping every 2 s rather than 30.
    else server = await startServer({ ...Object.fromEntries(Object.entries(s.env).filter(([k]) => k !== "HOLM_POOL")), HOLM_SERVER_REAP_SECS: "2" });
  }
  expect(hit, "the kill came before the server wrote the container's id down").toBe(true);
  await until("the pool container to go", poolContainers, (ids) => ids.length === 0, 30_000);
}, 240_000);
