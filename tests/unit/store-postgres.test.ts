import { describe, expect, it } from "vitest";
import { ON_POSTGRES } from "../support/postgres";
import { storeModules } from "../support/store-modules";

// The store on PostgreSQL itself (docs/decisions/0020), no server and no boxes: the migrations on
// a fresh database, the types that come back, and the spots where transactions run side by side
// (the pool, or several servers) where SQLite ran them one at a time. Runs when the run has a
// PostgreSQL: HOLM_TEST_POSTGRES=1 or HOLM_TEST_STORE=postgres (`bash scripts/setup.sh` with
// either starts one).

const WITH_POSTGRES = ON_POSTGRES || process.env.HOLM_TEST_POSTGRES === "1";
const stores = storeModules("pgstore");

let boxCounter = 0;
const newBoxId = () => `box_${(0xb0000000 + ++boxCounter).toString(16)}${process.pid.toString(16).padStart(8, "0")}`;

function boxRow(id: string, owner: string | null, now = Date.now()) {
  return {
    id,
    owner,
    runtime: "docker",
    runtime_ref: null,
    spec_digest: "d",
    spec_json: '{"policy":{}}',
    placement_json: "{}",
    image: null,
    state: "ready",
    reason: null,
    screens: 1,
    width: 1280,
    height: 800,
    persistent: 0,
    created_at_ms: now,
    expires_at_ms: now + 3_600_000,
    idle_timeout_secs: null,
    last_used_ms: now,
    removed_at_ms: null,
  };
}

async function open() {
  const { dbm, stateDir } = await stores.openStore("postgres");
  return { dbm, db: dbm.db(), stateDir };
}

describe.skipIf(!WITH_POSTGRES)("the store on PostgreSQL", () => {
  it("runs every migration on a fresh database, once: a second open and two servers migrating at once change nothing", async () => {
    const { dbm, db } = await open();
    expect(dbm.storeKind()).toBe("postgres");
    const { sql } = await import("kysely");
    const { migrationProvider } = await import("../../db/migrations");
    const done = await sql<{ name: string }>`select name from kysely_migration`.execute(db);
    expect(done.rows.map((r) => r.name).sort()).toEqual(Object.keys(await migrationProvider.getMigrations()).sort());
    // The identity key of `event`, bytea for frames, bigint for times.
    const typeOf = async (table: string, column: string) => {
      const r = await sql<{ data_type: string; is_identity: string }>`select data_type, is_identity from information_schema.columns
        where table_schema = current_schema() and table_name = ${table} and column_name = ${column}`.execute(db);
      return r.rows[0];
    };
    expect(await typeOf("event", "seq")).toEqual({ data_type: "integer", is_identity: "YES" });
    expect(await typeOf("trace_frame", "png")).toMatchObject({ data_type: "bytea" });
    expect(await typeOf("box", "created_at_ms")).toMatchObject({ data_type: "bigint" });

    // Two migrators at once on the same database (two servers booting): Kysely's lock takes turns.
    const { Kysely, PostgresDialect } = await import("kysely");
    const { Migrator } = await import("kysely/migration");
    const url = process.env.HOLM_DATABASE_URL!;
    const others = [0, 1].map(() => new Kysely<unknown>({ dialect: new PostgresDialect({ pool: dbm.postgresPool(url, 2) }) }));
    try {
      const results = await Promise.all(others.map((o) => new Migrator({ db: o, provider: migrationProvider, allowUnorderedMigrations: true }).migrateToLatest()));
      for (const r of results) {
        expect(r.error).toBeUndefined();
        expect(r.results).toEqual([]);
      }
    } finally {
      await Promise.all(others.map((o) => o.destroy()));
    }
  });

  it("a connection that dies while a transaction holds it fails that transaction, not the process", async () => {
    // CI run 73: PostgreSQL cut while a connection was checked out between two queries: pg emitted
    // 'error' on the client, which the pool listens to only while the client is idle, and the
    // server exited. Here the backend is ended from another connection mid-transaction.
    const { dbm } = await open();
    const { Kysely, PostgresDialect, sql } = await import("kysely");
    const url = process.env.HOLM_DATABASE_URL!;
    const pool = dbm.postgresPool(url, 2);
    const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
    const killer = dbm.postgresPool(url, 1);
    try {
      const died = db.transaction().execute(async (trx) => {
        const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
        await killer.query("select pg_terminate_backend($1)", [rows[0]!.pid]);
        // The socket's end arrives while no query runs on it: the case that killed the server.
        await new Promise((r) => setTimeout(r, 500));
        await sql`select 1`.execute(trx);
      });
      await expect(died).rejects.toThrow();
      // The pool opens a new connection for the next query.
      const { rows } = await sql<{ x: number }>`select 1 as x`.execute(db);
      expect(rows[0]!.x).toBe(1);
    } finally {
      await db.destroy();
      await killer.end();
    }
  });

  it("gives numbers back for bigint columns and counts, keeps bytes, sorts text by bytes, and ends a box row as it went in", async () => {
    const { db } = await open();
    const id = newBoxId();
    const now = Date.now();
    await db.insertInto("box").values(boxRow(id, "ws_a", now)).execute();
    const row = await db.selectFrom("box").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ id, owner: "ws_a", created_at_ms: now, expires_at_ms: now + 3_600_000, persistent: 0, pooled: 0, desktop: 1, removed_at_ms: null });
    expect(typeof row.created_at_ms).toBe("number");
    const { n } = await db.selectFrom("box").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
    expect(n).toBe(1);
    const { max } = await db.selectFrom("box").select((eb) => eb.fn.max("created_at_ms").as("max")).executeTakeFirstOrThrow();
    expect(max).toBe(now);

    // The box model reads it as on SQLite.
    const record = await import("~/models/box-record.server");
    const json = record.toBoxJson((await record.loadRow(id))!);
    expect(json).toMatchObject({ id, created_at_ms: now, expires_at_ms: now + 3_600_000, labels: {} });
    // Its query is compiled once and run with each id (prepared-query.server.ts): a NUL in an id
    // is not an error on PostgreSQL, and the second id read is not the first one's row.
    expect(await record.loadRow("box_\u0000")).toBeUndefined();
    expect((await record.loadRow(id))?.id).toBe(id);

    // Frames as bytea: every byte value comes back.
    const png = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    await db.insertInto("trace_frame").values({ hash: "ab".repeat(32), bytes: png.length, created_at_ms: now, last_ref_ms: now, png }).execute();
    const f = await db.selectFrom("trace_frame").select("png").where("hash", "=", "ab".repeat(32)).executeTakeFirstOrThrow();
    expect(Buffer.compare(f.png!, png)).toBe(0);

    // Text sorts by bytes (the tests' databases and setup.sh's have C collation), as on SQLite.
    await db.insertInto("runtime").values(["b", "B", "a", "A", "_x"].map((name) => ({ name, provider: "p", fields_json: "{}", secret_names: "[]", sealed: null, created_at_ms: now, updated_at_ms: now }))).execute();
    expect((await db.selectFrom("runtime").select("name").orderBy("name").execute()).map((r) => r.name)).toEqual(["A", "B", "_x", "a", "b"]);
    // A NUL in text (PostgreSQL refuses it; a container's output may carry one) does not fail the write.
    await db.updateTable("box").set({ reason: "exited\u0000 with junk" }).where("id", "=", id).execute();
    await db.updateTable("box").set({ state: "failed" }).where("id", "in", [id, "x\u0000"]).execute();
    expect(await db.selectFrom("box").select(["reason", "state"]).where("id", "=", id).executeTakeFirst()).toEqual({ reason: "exited\uFFFD with junk", state: "failed" });
    // Equality is case-sensitive, as on SQLite.
    expect(await db.selectFrom("runtime").select("name").where("name", "=", "A").execute()).toEqual([{ name: "A" }]);
  });

  it("numbers events so that a reader following seq never skips one committed late", async () => {
    const { db } = await open();
    const events = await import("~/models/event.server");
    const seen: number[] = [];
    let after = 0;
    const follow = async () => {
      const page = await events.listEvents({ after, limit: 1000 });
      for (const e of page.events) seen.push(e.seq);
      after = page.next;
    };
    const writes = Array.from({ length: 60 }, (_, i) => events.recordEvent("box.created", { owner: "ws_a", box_id: `box_${i}` }));
    // Read while they land; then once more after.
    const reading = (async () => {
      for (let i = 0; i < 20; i++) {
        await follow();
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    const made = await Promise.all(writes);
    await reading;
    await follow();
    expect(new Set(made.map((e) => e.seq)).size).toBe(60);
    expect(seen.sort((a, b) => a - b)).toEqual(made.map((e) => e.seq).sort((a, b) => a - b));
    const { n } = await db.selectFrom("event").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
    expect(n).toBe(60);
  });

  it("keeps a workspace's limits under concurrent creates: boxes, secrets, webhooks", async () => {
    const { db } = await open();
    // HOLM_WORKSPACE_BOXES: 10 by default.
    const quota = await import("~/models/quota.server");
    const tries = await Promise.allSettled(Array.from({ length: 25 }, () => quota.insertBoxWithinLimits(boxRow(newBoxId(), "ws_q"))));
    expect(tries.filter((t) => t.status === "fulfilled")).toHaveLength(10);
    for (const t of tries) if (t.status === "rejected") expect((t.reason as Error).message).toMatch(/already has 10 live boxes/);
    const { n } = await db.selectFrom("box").select((eb) => eb.fn.countAll<number>().as("n")).where("owner", "=", "ws_q").executeTakeFirstOrThrow();
    expect(n).toBe(10);

    const sealed = await import("~/models/sealed-store.server");
    const writes = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => sealed.writeSealed("secrets", "ws_q", `S${i}`, Buffer.from("v"), 4)));
    expect(writes.filter((t) => t.status === "fulfilled")).toHaveLength(4);
    expect(await sealed.listSealed("secrets", "ws_q")).toHaveLength(4);
    // The same name written at once by many: one row, never a conflict error.
    const same = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => sealed.writeSealed("secrets", "ws_r", "ONE", Buffer.from(`v${i}`), 4)));
    expect(same.filter((t) => t.status === "rejected")).toEqual([]);
    expect(await sealed.listSealed("secrets", "ws_r")).toHaveLength(1);
  });

  it("keeps the secret values typed into a box, sealed, once each, and lets them go with its row", async () => {
    const { db } = await open();
    const id = newBoxId();
    await db.insertInto("box").values(boxRow(id, "ws_t")).execute();
    const typed = await import("~/models/secret-typed.server");
    await Promise.all([typed.rememberTyped(id, "Bq7sEcr3tVaLue1"), typed.rememberTyped(id, "Bq7sEcr3tVaLue1"), typed.rememberTyped(id, "Cw2OtherSecr3t2")]);
    const rows = await db.selectFrom("box_typed_secret").select("sealed").where("box_id", "=", id).execute();
    expect(rows).toHaveLength(2);
    for (const r of rows) expect(r.sealed).not.toMatch(/Bq7s|Cw2O/);
    expect([...(await typed.typedValues(id))].sort()).toEqual(["Bq7sEcr3tVaLue1", "Cw2OtherSecr3t2"]);
    await db.deleteFrom("box").where("id", "=", id).execute();
    expect(await db.selectFrom("box_typed_secret").select("tag").where("box_id", "=", id).execute()).toEqual([]);
  });

  it("fans events out to webhooks once, with fan-outs running at once", async () => {
    const { db } = await open();
    const now = Date.now();
    await db
      .insertInto("webhook")
      .values({ id: "whk_1", owner: "server", url: "http://example.test/", kinds_json: '["*"]', sealed_secret: "x", sealed_previous_secret: null, previous_until_ms: null, enabled: 1, created_by: "server", created_at_ms: now, updated_at_ms: now })
      .execute();
    const delivery = await import("~/models/webhook-delivery.server");
    await delivery.initCursor();
    const events = await import("~/models/event.server");
    for (let i = 0; i < 30; i++) await events.recordEvent("box.created", { box_id: `box_${i}` });
    const made = await Promise.all(Array.from({ length: 6 }, () => delivery.fanOut(7)));
    let total = made.reduce((a, b) => a + b, 0);
    while (total < 30) {
      const more = await delivery.fanOut(7);
      if (more === 0) break;
      total += more;
    }
    expect(total).toBe(30);
    const rows = await db.selectFrom("webhook_delivery").select("event_seq").execute();
    expect(rows).toHaveLength(30);
    expect(new Set(rows.map((r) => r.event_seq)).size).toBe(30);
  });

  it("picks due webhook deliveries fairly: one per webhook, two per workspace, none for a webhook another server is sending", async () => {
    const { db } = await open();
    const now = Date.now();
    const hook = (id: string, owner: string) => ({ id, owner, url: "http://example.test/", kinds_json: '["*"]', sealed_secret: "x", sealed_previous_secret: null, previous_until_ms: null, enabled: 1, created_by: owner, created_at_ms: now, updated_at_ms: now });
    await db.insertInto("webhook").values([hook("whk_a1", "ws_a"), hook("whk_a2", "ws_a"), hook("whk_a3", "ws_a"), hook("whk_b1", "ws_b"), hook("whk_c1", "ws_c")]).execute();
    const row = (id: string, webhook_id: string, at: number, claimed_until_ms: number | null = null) => ({ id, webhook_id, event_seq: 1, kind: "box.created", body: "{}", status: "pending", attempts: 0, created_at_ms: at, next_at_ms: at, claimed_by: claimed_until_ms ? "other" : null, claimed_until_ms });
    await db
      .insertInto("webhook_delivery")
      .values([
        ...["whk_a1", "whk_a2", "whk_a3"].flatMap((h) => [row(`${h}_1`, h, now - 9000), row(`${h}_2`, h, now - 8000)]),
        row("whk_b1_1", "whk_b1", now - 10),
        row("whk_c1_1", "whk_c1", now - 5000, now + 60_000),
        row("whk_c1_2", "whk_c1", now - 4000),
      ])
      .execute();
    const delivery = await import("~/models/webhook-delivery.server");
    const picked = await delivery.dueDeliveries(now, { webhooks: new Set(), owners: new Map() }, 8, new Map());
    expect(picked.map((d) => d.id).sort()).toEqual(["whk_a1_1", "whk_a2_1", "whk_b1_1"]);
    // Workspace A already sending one: one more for it; B served most recently goes last.
    const again = await delivery.dueDeliveries(now, { webhooks: new Set(["whk_a1"]), owners: new Map([["ws_a", 1]]) }, 1, new Map([["ws_b", 2], ["ws_a", 1]]));
    expect(again.map((d) => d.id)).toEqual(["whk_a2_1"]);
  });

  it("two servers writing one box's trace get one gap-free, ordered seq; a frame written by one is the last frame for the other", async () => {
    await open();
    const trace = await import("~/models/trace.server");
    const [a, b] = [new trace.PostgresTraceStore(), new trace.PostgresTraceStore()];
    const box = newBoxId();
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 50; i++) {
      calls.push(a.recordEntries(box, [{ actor: "agent", event: "acted", data: { from: "a", i } }]));
      calls.push(b.recordEntries(box, [{ actor: "agent", event: "acted", data: { from: "b", i } }, { actor: "agent", event: "acted", data: { from: "b", i, two: true } }]));
    }
    await Promise.all(calls);
    const page = await a.readTrace(box, { after: -1, limit: 500 });
    expect(page.entries.map((e) => e.seq)).toEqual(Array.from({ length: 150 }, (_, i) => i));
    // Each server's own calls keep their order, and a batch stays together.
    for (const from of ["a", "b"]) {
      const mine = page.entries.filter((e) => e.data!.from === from && !e.data!.two).map((e) => e.data!.i);
      expect(mine).toEqual(Array.from({ length: 50 }, (_, i) => i));
    }
    page.entries.forEach((e, i) => {
      if (e.data!.two) expect(page.entries[i - 1]!.data).toEqual({ from: "b", i: e.data!.i });
    });
    for (let i = 1; i < page.entries.length; i++) expect(page.entries[i]!.at_ms).toBeGreaterThanOrEqual(page.entries[i - 1]!.at_ms);

    const { frameEntry } = await import("~/models/trace-types.server");
    const x = { png: Buffer.from("frame x") };
    const y = { png: Buffer.from("frame y") };
    expect(await a.recordFrameIfChanged(box, frameEntry(0, "agent", x))).toMatchObject({ seq: 150 });
    // B has never seen this box's frames: it reads them from the store.
    expect(await b.recordFrameIfChanged(box, frameEntry(0, "agent", x))).toBeUndefined();
    expect(await b.recordFrameIfChanged(box, frameEntry(0, "agent", y))).toMatchObject({ seq: 151 });
    // A's memory of screen 0 is stale now (B wrote since): it must not skip x.
    expect(await a.recordFrameIfChanged(box, frameEntry(0, "agent", x))).toMatchObject({ seq: 152 });
    expect(await a.readBoxFrame(box, frameEntry(0, "agent", y).frame.hash)).toEqual(y.png);
    expect(await b.hasTrace(box)).toBe(true);

    // Pruning on one server while the other records frames: every entry's frame is there after.
    const writes = Array.from({ length: 20 }, (_, i) => b.recordEntries(box, [{ actor: "agent", event: "frame", screen: 1, frame: { png: Buffer.from(`f${i}`) } }]));
    const prunes = [a.prune({ frames: Date.now() + 1000, entries: 0, removed: 0 }), a.prune({ frames: 0, entries: Date.now() - 1, removed: 0 })];
    await Promise.all([...writes, ...prunes]);
    const left = await a.readTrace(box, { after: -1, limit: 500 });
    for (const e of left.entries.filter((e) => e.frame && e.screen === 1)) expect(await a.readFrame(e.frame!)).toBeDefined();
  });

  it("refuses HOLM_STORAGE_BACKEND=postgres without HOLM_DATABASE_URL, by name", async () => {
    const { parseEnv } = await import("~/utils/env.server");
    expect(() => parseEnv({ HOLM_STORAGE_BACKEND: "postgres" })).toThrow(/HOLM_DATABASE_URL: HOLM_STORAGE_BACKEND=postgres needs HOLM_DATABASE_URL/);
    expect(() => parseEnv({ HOLM_STORAGE_BACKEND: "postgres", HOLM_DATABASE_URL: "mysql://x/y" })).toThrow(/HOLM_DATABASE_URL: a PostgreSQL URL/);
    expect(parseEnv({ HOLM_STORAGE_BACKEND: "postgres", HOLM_DATABASE_URL: "postgres://h:p@127.0.0.1:5432/holm" }).HOLM_DATABASE_URL).toBe("postgres://h:p@127.0.0.1:5432/holm");
  });
});
