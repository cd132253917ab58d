import { randomBytes } from "node:crypto";
import SQLite from "better-sqlite3";
import { Kysely, SqliteDialect } from "kysely";
import { Migrator } from "kysely/migration";
import { describe, expect, it } from "vitest";
import { migrationProvider } from "../../db/migrations";
import { RECORDING_PART_BYTES } from "../../db/migrations/0021-recording-parts";

// Migration 0021 moves the recordings a store kept as one blob each (0017) into parts of
// RECORDING_PART_BYTES, which a range read fetches one or two of (recording-store.server.ts),
// and back on the way down. A SQLite store in memory, migrated as the server migrates it.

describe("recordings kept before 0021", () => {
  it("move into 1 MiB parts (the last one short), byte for byte, and back on the way down", async () => {
    const sqlite = new SQLite(":memory:");
    sqlite.pragma("foreign_keys = ON");
    const db = new Kysely<any>({ dialect: new SqliteDialect({ database: sqlite }) });
    const migrator = new Migrator({ db, provider: migrationProvider, allowUnorderedMigrations: true });
    expect((await migrator.migrateTo("0019-direct-tickets")).error).toBeUndefined();
    const data = randomBytes(2 * RECORDING_PART_BYTES + 12_345);
    const row = { box_id: "box_x", screen: 0, fps: 10, started_at_ms: 1, stopped_at_ms: 2, bytes: data.length, path: "/tmp/r.mp4" };
    await db.insertInto("trace_recording").values([{ id: "rec_0000000000000001", ...row, data }, { id: "rec_0000000000000002", ...row, bytes: 0, data: Buffer.alloc(0) }]).execute();

    expect((await migrator.migrateTo("0021-recording-parts")).error).toBeUndefined();
    const parts = await db.selectFrom("trace_recording_part").selectAll().where("recording_id", "=", "rec_0000000000000001").orderBy("n").execute();
    expect(parts.map((p) => [p.n, p.data.length])).toEqual([[0, RECORDING_PART_BYTES], [1, RECORDING_PART_BYTES], [2, 12_345]]);
    expect(Buffer.concat(parts.map((p) => p.data)).equals(data)).toBe(true);
    expect(sqlite.prepare("select count(*) from trace_recording_part where recording_id = 'rec_0000000000000002'").pluck().get()).toBe(0);
    expect(sqlite.prepare("select name from pragma_table_info('trace_recording')").pluck().all()).not.toContain("data");
    // Parts go with their recording.
    await db.deleteFrom("trace_recording").where("id", "=", "rec_0000000000000002").execute();
    await db.deleteFrom("trace_recording").where("id", "=", "rec_0000000000000001").execute();
    expect(sqlite.prepare("select count(*) from trace_recording_part").pluck().get()).toBe(0);

    await db.insertInto("trace_recording").values({ id: "rec_0000000000000003", ...row }).execute();
    await db.insertInto("trace_recording_part").values([{ recording_id: "rec_0000000000000003", n: 1, data: data.subarray(RECORDING_PART_BYTES, 2 * RECORDING_PART_BYTES) }, { recording_id: "rec_0000000000000003", n: 0, data: data.subarray(0, RECORDING_PART_BYTES) }]).execute();
    expect((await migrator.migrateTo("0019-direct-tickets")).error).toBeUndefined();
    const back = await db.selectFrom("trace_recording").select("data").where("id", "=", "rec_0000000000000003").executeTakeFirstOrThrow();
    expect(Buffer.from(back.data).equals(data.subarray(0, 2 * RECORDING_PART_BYTES))).toBe(true);
    await db.destroy();
  });
});
