import { describe, expect, it } from "vitest";
import { storeModules } from "../support/store-modules";

// app/utils/prepared-query.server.ts: a query compiled once, run with each call's values.

const { openStore } = storeModules("prepared");

describe("prepared queries", () => {
  it("puts each value where its placeholder went, whatever the SQL's order, and follows a reopened store", async () => {
    const { dbm } = await openStore("memory");
    const { prepared } = await import("~/utils/prepared-query.server");
    const now = Date.now();
    const row = (name: string, provider: string) => ({ name, provider, fields_json: "{}", secret_names: "[]", sealed: null, created_at_ms: now, updated_at_ms: now });
    await dbm.db().insertInto("runtime").values([row("a", "p1"), row("b", "p2"), row("c", "p1")]).execute();
    // The second value is placed first in the SQL.
    const byProviderNot = prepared(2, (store, name, provider) =>
      store.selectFrom("runtime").select("name").where("provider", "=", provider).where("name", "!=", name).orderBy("name"),
    );
    expect((await byProviderNot("a", "p1")).map((r) => r.name)).toEqual(["c"]);
    expect((await byProviderNot("c", "p1")).map((r) => r.name)).toEqual(["a"]);
    expect((await byProviderNot("x", "p2")).map((r) => r.name)).toEqual(["b"]);

    // A placeholder the query does not use is a mistake, said at once.
    const unused = prepared(2, (store, name) => store.selectFrom("runtime").select("name").where("name", "=", name));
    await expect(unused("a", "b")).rejects.toThrow(/placed 1 of its 2 values/);

    // After the store is opened again, the query is compiled for the new one.
    await dbm.closeDb();
    await dbm.openDb();
    await dbm.db().insertInto("runtime").values([row("z", "p1")]).execute();
    expect((await byProviderNot("a", "p1")).map((r) => r.name)).toEqual(["z"]);
  });
});
