import type { Compilable, CompiledQuery, Kysely } from "kysely";
import type { Database } from "../../db/schema";
import { db, storeKind, withoutNul } from "./db.server";

// A query on the hot path, built and compiled by Kysely once per store and then run with each
// call's values. Profiled on a one-click batch, building and compiling `loadRow`'s one-line
// select took about fifteen times as long as running it (SQLite's statement is cached already):
// Kysely builds an operation tree and walks it into SQL on every call.

/** Marks a value's place in the compiled parameters; no real value starts with U+0001. */
const MARK = "\u0001holm-value-";

/**
 * `build` gets one placeholder per value (`arity` of them) and puts each where its value goes;
 * the placeholders are found in the compiled parameters, so their order in the SQL does not
 * matter. Strings lose their NULs on PostgreSQL (withoutNul), as every other query's do.
 */
export function prepared<R>(arity: number, build: (store: Kysely<Database>, ...values: string[]) => Compilable<R>) {
  let kept: { store: Kysely<Database>; query: CompiledQuery<R>; slots: number[] } | undefined;
  return async (...values: unknown[]): Promise<R[]> => {
    const store = db();
    if (kept?.store !== store) {
      const marks = Array.from({ length: arity }, (_, i) => `${MARK}${i}`);
      const query = build(store, ...marks).compile();
      const slots = query.parameters.map((p) => (typeof p === "string" && p.startsWith(MARK) ? Number(p.slice(MARK.length)) : -1));
      if (new Set(slots.filter((s) => s >= 0)).size !== arity) throw new Error(`a prepared query placed ${slots.filter((s) => s >= 0).length} of its ${arity} values`);
      kept = { store, query, slots };
    }
    const { query, slots } = kept;
    const pg = storeKind() === "postgres";
    const parameters = query.parameters.map((p, i) => (slots[i]! < 0 ? p : pg ? withoutNul(values[slots[i]!]) : values[slots[i]!]));
    return (await store.executeQuery<R>({ ...query, parameters })).rows;
  };
}
