// Regenerates tests/fixtures/upgrade/: a `local` store made and filled by an older holm (the
// schema of the previous release), which tests/unit/upgrade.test.ts opens with today's code.
//   node scripts/make-upgrade-fixture.mjs [COMMIT]    (default: the commit the fixture names)
// The commit's app/, db/, tsconfig.json and package.json are unpacked in .upgrade-fixture-*/ here (so its imports
// find this checkout's node_modules), scripts/upgrade-fixture/fill.ts runs there with tsx (that
// release's migrations and models write every row), and the store is written out as SQL text
// (reviewable, and *.db is ignored), with the frames and the secrets used beside it as JSON.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import SQLite from "better-sqlite3";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const outDir = path.join(root, "tests/fixtures/upgrade");
export const FIXTURE_KEY = "upgrade-fixture-server-key-not-a-secret-0123456789";
const commit = process.argv[2] ?? JSON.parse(fs.readFileSync(path.join(outDir, "store.json"), "utf8")).commit;
const short = execFileSync("git", ["rev-parse", "--short", commit], { cwd: root, encoding: "utf8" }).trim();

const tree = fs.mkdtempSync(path.join(root, ".upgrade-fixture-"));
const state = fs.mkdtempSync(path.join(os.tmpdir(), "holm-upgrade-state-"));
try {
  const archive = execFileSync("git", ["archive", short, "app", "db", "tsconfig.json", "package.json"], { cwd: root, maxBuffer: 1 << 28 });
  execFileSync("tar", ["-x", "-C", tree], { input: archive });
  fs.copyFileSync(path.join(root, "scripts/upgrade-fixture/fill.ts"), path.join(tree, "fill.ts"));
  const out = execFileSync(process.execPath, ["--import", "tsx", "fill.ts"], {
    cwd: tree,
    encoding: "utf8",
    env: { PATH: process.env.PATH, HOME: os.homedir(), HOLM_CONFIG_FILE: "none", HOLM_STORAGE_BACKEND: "local", HOLM_STATE_DIR: state, HOLM_SECRET_KEY: FIXTURE_KEY, HOLM_WEBHOOK_ALLOW_PRIVATE: "1" },
  });
  const made = JSON.parse(out.trim().split("\n").at(-1));
  fs.writeFileSync(path.join(outDir, "store.sql"), dump(path.join(state, "holm.db"), short));
  fs.writeFileSync(path.join(outDir, "store.json"), `${JSON.stringify({ commit: short, server_key: FIXTURE_KEY, ...made }, null, 2)}\n`);
  console.log(`tests/fixtures/upgrade/: the store of ${short}`);
} finally {
  fs.rmSync(tree, { recursive: true, force: true });
  fs.rmSync(state, { recursive: true, force: true });
}

/** The store as SQL: its tables, rows and indexes, in an order that loads into an empty file. */
function dump(file, from) {
  const db = new SQLite(file, { readonly: true });
  const quote = (v) =>
    v === null ? "NULL" : typeof v === "number" || typeof v === "bigint" ? String(v) : Buffer.isBuffer(v) ? `X'${v.toString("hex")}'` : `'${String(v).replaceAll("'", "''")}'`;
  const lines = [`-- The store of holm ${from}, made by scripts/make-upgrade-fixture.mjs: do not edit, regenerate.`, "PRAGMA foreign_keys = OFF;", "BEGIN;"];
  const objects = db.prepare("select type, name, sql from sqlite_master where sql is not null order by type = 'index', rowid").all();
  for (const o of objects) {
    if (o.name === "sqlite_sequence") continue;
    lines.push(`${o.sql};`);
    if (o.type !== "table") continue;
    for (const row of db.prepare(`select * from "${o.name}"`).raw().all()) lines.push(`INSERT INTO "${o.name}" VALUES (${row.map(quote).join(", ")});`);
  }
  for (const row of db.prepare("select name, seq from sqlite_sequence").all()) lines.push(`INSERT INTO sqlite_sequence VALUES (${quote(row.name)}, ${row.seq});`);
  lines.push("COMMIT;", "");
  db.close();
  return lines.join("\n");
}
