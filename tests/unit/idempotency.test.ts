import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withIdempotency } from "~/edge/idempotency.server";
import { hashBody } from "~/models/idempotency.server";
import { ApiError } from "~/utils/api-error.server";
import { closeDb, db, openDb } from "~/utils/db.server";

// The keys are in the store (docs/decisions/0021): the unit store is SQLite in memory.
beforeAll(async () => {
  await openDb();
});
afterAll(async () => {
  await closeDb();
});

describe("idempotency", () => {
  it("runs the work once for one key and body, and replays the first result", async () => {
    let runs = 0;
    const work = async () => ({ status: 200, body: { n: ++runs } });
    const a = await withIdempotency("t1", "k", '{"a":1}', work);
    const b = await withIdempotency("t1", "k", '{"a":1}', work);
    expect(await a.json()).toEqual({ n: 1 });
    expect(await b.json()).toEqual({ n: 1 });
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    expect(runs).toBe(1);
  });

  it("refuses the same key with another body", async () => {
    const work = async () => ({ status: 200, body: {} });
    await withIdempotency("t2", "k", '{"a":1}', work);
    await expect(withIdempotency("t2", "k", '{"a":2}', work)).rejects.toMatchObject({ code: "bad_request" });
  });

  it("makes concurrent calls with one key share one run", async () => {
    let runs = 0;
    const work = async () => {
      runs++;
      await new Promise((r) => setTimeout(r, 50));
      return { status: 202, body: { id: "box_1" } };
    };
    const all = await Promise.all(Array.from({ length: 10 }, () => withIdempotency("t3", "k", "{}", work)));
    expect(runs).toBe(1);
    for (const r of all) {
      expect(r.status).toBe(202);
      expect(await r.json()).toEqual({ id: "box_1" });
    }
  });

  it("keeps keys apart by scope", async () => {
    let runs = 0;
    const work = async () => ({ status: 200, body: { n: ++runs } });
    await withIdempotency("ws_a", "k", "{}", work);
    await withIdempotency("ws_b", "k", "{}", work);
    expect(runs).toBe(2);
  });

  it("forgets a key whose first run threw, so a retry runs again", async () => {
    let runs = 0;
    const failing = async () => {
      runs++;
      throw new ApiError("unavailable", "engine down");
    };
    await expect(withIdempotency("t4", "k", "{}", failing)).rejects.toMatchObject({ code: "unavailable" });
    const ok = await withIdempotency("t4", "k", "{}", async () => ({ status: 200, body: { ok: true } }));
    expect(await ok.json()).toEqual({ ok: true });
    expect(runs).toBe(1);
  });

  it("runs without a key every time", async () => {
    let runs = 0;
    const work = async () => ({ status: 200, body: { n: ++runs } });
    await withIdempotency("t5", null, "{}", work);
    await withIdempotency("t5", null, "{}", work);
    expect(runs).toBe(2);
  });

  it("forgets a first call whose server died before it answered, and answers the retry", async () => {
    // As another server leaves it when killed mid-call: its row, no outcome, a server no longer alive.
    await db()
      .insertInto("idempotency")
      .values({ id: hashBody("t6\u0000k"), body_hash: hashBody("{}"), at_ms: Date.now(), server_id: "a-dead-server", outcome: null })
      .execute();
    const r = await withIdempotency("t6", "k", "{}", async () => ({ status: 200, body: { again: true } }));
    expect(await r.json()).toEqual({ again: true });
    expect(r.headers.get("idempotent-replayed")).toBeNull();
    const replay = await withIdempotency("t6", "k", "{}", async () => ({ status: 500, body: {} }));
    expect(await replay.json()).toEqual({ again: true });
  });
});
