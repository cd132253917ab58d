import { afterEach, expect, it } from "vitest";
import { type TestServer, RUN_LABEL, docker, json, removeTestBoxes, startServer } from "../support/server";
import { openStore } from "../support/store";
import { until } from "../support/until";
import { twoWorkspaces } from "../support/workspaces";

// The warm pool's loose ends (ADR 0014), on a durable store (SQLite, or PostgreSQL under
// HOLM_TEST_STORE=postgres): a claim cut between the `pooled = 1 → 0` update and its trace, and
// pool boxes whose launch failed.

let server: TestServer | undefined;

afterEach(async () => {
  await server?.stop("SIGKILL");
  server = undefined;
  await removeTestBoxes();
});

const CUT = "holm_test_cut_trace";
/** A trigger that fails every trace write, and its removal, in the store's own SQL. */
const cutSql = (kind: "sqlite" | "postgres") =>
  kind === "sqlite"
    ? { on: `create trigger ${CUT} before insert on trace_entry begin select raise(abort, 'cut by the test'); end`, off: `drop trigger if exists ${CUT}` }
    : {
        on: `create function ${CUT}() returns trigger language plpgsql as $$ begin raise exception 'cut by the test'; end $$; create trigger ${CUT} before insert on trace_entry for each row execute function ${CUT}()`,
        off: `drop trigger if exists ${CUT} on trace_entry; drop function if exists ${CUT}()`,
      };

it("a claim cut before its trace: after kill -9 the owner's box has a trace saying it was claimed from the pool, written once", async () => {
  const s = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_POOL: "default=1", HOLM_POOL_MAX_MEMORY: "4g" });
  server = s;
  const w = await twoWorkspaces(s);
  await until("the pool box", () => s.logs(), (l) => /pool: box_\w+ ready \(1 of 1 default\)/.test(l), 90_000);
  // The cut: every trace write fails from here on (a trigger in the real store, nothing in the
  // server), so the claim lands and its `box_created` and `ready` do not, as when the server is
  // killed between the two. Then it is killed, and restarted without the trigger.
  const store = openStore(s);
  const cut = cutSql(store.kind);
  let open = true;
  try {
    store.exec(cut.on);
    const box = await json(await w.asA("/v1/boxes", { method: "POST", json: { metadata: { name: "cut" } } }));
    expect(box).toMatchObject({ state: "ready", name: "cut" });
    await s.stop("SIGKILL");
    store.exec(cut.off);
    expect(Number(store.prepare("select count(*) as n from trace_entry where box_id = ?").get(box.id).n)).toBe(0);
    store.close();
    open = false;
    server = await s.restart();
    const events = async () => ((await json(await w.asA(`/v1/boxes/${box.id}/trace`))).entries as any[]).map((e) => [e.event, e.data?.claimed_from_pool ?? null]);
    expect(await json(await w.asA(`/v1/boxes/${box.id}`))).toMatchObject({ id: box.id, owner: box.owner, name: "cut", state: "ready" });
    expect(await events()).toEqual([
      ["box_created", true],
      ["adopted", null],
    ]);
    // Once: a second restart finds a trace and writes nothing.
    await server.stop("SIGKILL");
    server = await server.restart();
    expect(await events()).toEqual([
      ["box_created", true],
      ["adopted", null],
    ]);
  } finally {
    if (open) {
      store.exec(cut.off);
      store.close();
    }
  }
}, 240_000);

it("pool boxes killed as they boot leave no failed row behind once the next sweep has run", async () => {
  const s = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_POOL: "default=1", HOLM_POOL_MAX_MEMORY: "4g" });
  server = s;
  await until("the pool box", () => s.logs(), (l) => /pool: box_\w+ ready \(1 of 1 default\)/.test(l), 90_000);
  const events = await docker.getEvents({ filters: { type: ["container"], event: ["start"], label: [`holm.test=${RUN_LABEL}`, "holm.pool=1"] } });
  const stopEvents = () => (events as unknown as { destroy(): void }).destroy();
  try {
    events.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) void docker.getContainer(JSON.parse(line).id).kill().catch(() => undefined);
    });
    const [pooled] = await docker.listContainers({ filters: { label: [`holm.test=${RUN_LABEL}`, "holm.pool=1"] } });
    await docker.getContainer(pooled!.Id).kill();
    await until("two launches to fail", () => s.logs(), (l) => (l.match(/pool: a default box did not start/g) ?? []).length >= 2, 60_000);
  } finally {
    stopEvents();
  }
  await until("the pool to refill", () => s.logs(), (l) => (l.match(/pool: box_\w+ ready \(1 of 1 default\)/g) ?? []).length >= 2, 90_000);
  // Two sweeps later.
  await new Promise((r) => setTimeout(r, 4500));
  const store = openStore(s, { readonly: true });
  try {
    const rows = store.prepare("select state, removed_at_ms from box where pooled = 1").all() as { state: string; removed_at_ms: number | null }[];
    expect(rows.filter((r) => r.state === "failed" || r.state === "gone").length, "the failed launches' rows").toBeGreaterThanOrEqual(2);
    expect(rows.filter((r) => r.removed_at_ms === null)).toEqual([{ state: "ready", removed_at_ms: null }]);
  } finally {
    store.close();
  }
  // Nothing of theirs is left on the engine either: the one pool box's container alone.
  const left = await docker.listContainers({ all: true, filters: { label: [`holm.test=${RUN_LABEL}`, "holm.pool=1"] } });
  expect(left.map((c) => c.State)).toEqual(["running"]);
}, 240_000);
