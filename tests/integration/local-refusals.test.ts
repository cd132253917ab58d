import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip, createGzip } from "node:zlib";
import SQLite from "better-sqlite3";
import tar from "tar-stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ON_POSTGRES } from "../support/postgres";
import { ROOT, type TestServer, startServer } from "../support/server";

// What `holm restore`, `holm backup` and `holm doctor` (the built CLI) refuse, and how they say
// it: archives a holm backup never writes (names outside the state directory, links, a manifest
// without its fields, a SQLite file no holm made, a store a newer holm opened, an oversized entry,
// a cut or non-gzip file), a state directory reached through a symlink while a server runs on it,
// an engine that accepts and never answers, a state directory the server could not use. No box is
// made: only servers.

const work = fs.mkdtempSync(path.join(os.tmpdir(), "holm-refusals-"));
let server: TestServer;
/** An archive `holm backup` wrote of a freshly started server's store. */
const good = path.join(work, "good.tar.gz");

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

function holm(args: string[], extra: Record<string, string> = {}, timeoutMs = 60_000): Promise<Ran> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, "build/cli/holm.js"), ...args], {
      cwd: work,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/root", HOLM_CONFIG_FILE: "none", HOLM_STORAGE_BACKEND: "local", HOLM_ROOT: ROOT, ...extra },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => (clearTimeout(timer), resolve({ code, stdout, stderr, ms: Date.now() - t0 })));
  });
}

type Entry = { name: string; data?: Buffer | string; type?: "file" | "symlink" | "link"; linkname?: string; size?: number; stream?: () => Readable };

async function archive(file: string, entries: Entry[]): Promise<string> {
  const pack = tar.pack();
  const written = pipeline(pack, createGzip({ level: 1 }), fs.createWriteStream(file));
  for (const e of entries) {
    if (e.type === "symlink" || e.type === "link") {
      pack.entry({ name: e.name, type: e.type, linkname: e.linkname });
    } else if (e.stream) {
      await pipeline(e.stream(), pack.entry({ name: e.name, size: e.size! }));
    } else {
      pack.entry({ name: e.name }, typeof e.data === "string" ? Buffer.from(e.data) : e.data!);
    }
  }
  pack.finalize();
  await written;
  return file;
}

/** The good archive's entries, read back, to build altered ones from. */
async function goodEntries(): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  const extract = tar.extract();
  extract.on("entry", (h, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on("data", (c: unknown) => chunks.push(c as Buffer));
    stream.on("end", () => (out.set(h.name, Buffer.concat(chunks)), next()));
  });
  await pipeline(fs.createReadStream(good), createGunzip(), extract);
  return out;
}

/** A directory holding a good restored store, to check a refusal leaves it as it was. */
async function goodDir(name: string): Promise<string> {
  const dir = path.join(work, name);
  const ran = await holm(["restore", good, "--state-dir", dir]);
  expect(ran.code, ran.stderr).toBe(0);
  return dir;
}

const leftovers = (dir: string) => fs.readdirSync(dir).filter((n) => n.startsWith(".holm-restore-"));

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_STATE_DIR: path.join(work, "live") });
  const ran = await holm(["backup", good, "--state-dir", server.stateDir]);
  expect(ran.code, ran.stderr).toBe(0);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  fs.rmSync(work, { recursive: true, force: true });
});

describe.skipIf(ON_POSTGRES)("holm restore refuses what it cannot restore safely", () => {
  it("refuses a running server's directory named through a symlink", async () => {
    const link = path.join(work, "live-link");
    fs.symlinkSync(server.stateDir, link);
    const key = fs.readFileSync(path.join(server.stateDir, "secret.key"));
    const ran = await holm(["restore", good, "--state-dir", link, "--force"]);
    expect(ran.code).toBe(1);
    expect(ran.stderr).toMatch(new RegExp(`has its store open in process .*${server.pid}.*stop it first`));
    expect(fs.readFileSync(path.join(server.stateDir, "secret.key")).equals(key)).toBe(true);
    expect((await server.api("/v1/health")).status).toBe(200);
  });

  it("refuses a store a newer holm opened before touching the directory; a server on one says why it stops", async () => {
    const entries = await goodEntries();
    const db = path.join(work, "future.db");
    fs.writeFileSync(db, entries.get("holm.db")!);
    const s = new SQLite(db);
    s.prepare("insert into kysely_migration (name, timestamp) values (?, ?)").run("9999_from_the_future", new Date().toISOString());
    s.close();
    const manifest = JSON.parse(entries.get("holm-backup.json")!.toString());
    manifest.migrations.push("9999_from_the_future");
    const file = await archive(path.join(work, "future.tar.gz"), [
      { name: "holm.db", data: fs.readFileSync(db) },
      { name: "secret.key", data: entries.get("secret.key")! },
      { name: "holm-backup.json", data: JSON.stringify(manifest) },
    ]);
    const dir = await goodDir("kept-future");
    const before = fs.readFileSync(path.join(dir, "holm.db"));
    const ran = await holm(["restore", file, "--state-dir", dir, "--force"]);
    expect(ran.code).toBe(1);
    expect(ran.stderr).toMatch(/a newer holm made this store \(9999_from_the_future\)/);
    expect(fs.readFileSync(path.join(dir, "holm.db")).equals(before)).toBe(true);
    expect(leftovers(dir)).toEqual([]);

    const newer = path.join(work, "newer");
    fs.mkdirSync(newer);
    fs.copyFileSync(db, path.join(newer, "holm.db"));
    const err = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_STATE_DIR: newer }).then(
      (s) => (s.stop(), ""),
      (e: Error) => e.message,
    );
    expect(err).toMatch(/this store was made by a newer holm \(migration 9999_from_the_future\)/);
  }, 90_000);

  it("refuses a SQLite file no holm made (no holm migrations) as the store, replacing nothing", async () => {
    const entries = await goodEntries();
    const manifest = entries.get("holm-backup.json")!;
    // Another program's database: valid SQLite, passes quick_check, with tables of its own.
    const other = path.join(work, "other.db");
    const s = new SQLite(other);
    s.exec("create table notes (id integer primary key, body text); insert into notes (body) values ('hello')");
    s.close();
    // And a store with a kysely_migration table none of whose names are holm's.
    const foreign = path.join(work, "foreign.db");
    const f = new SQLite(foreign);
    f.exec("create table kysely_migration (name varchar(255) not null primary key, timestamp varchar(255) not null)");
    f.prepare("insert into kysely_migration (name, timestamp) values (?, ?)").run("20240101_someone_elses_app", new Date().toISOString());
    f.close();
    const dir = await goodDir("kept-other");
    const before = fs.readFileSync(path.join(dir, "holm.db"));
    for (const [name, db] of [["other", other], ["foreign", foreign]] as const) {
      const file = await archive(path.join(work, `${name}.tar.gz`), [
        { name: "holm.db", data: fs.readFileSync(db) },
        { name: "holm-backup.json", data: manifest },
      ]);
      const ran = await holm(["restore", file, "--state-dir", dir, "--force"]);
      expect(ran.code, `${name}: ${ran.stdout}`).toBe(1);
      expect(ran.stderr, name).toMatch(/holm\.db is not a holm store \(no holm migration ran on it\): nothing was replaced/);
      expect(ran.stdout, name).not.toMatch(/restored/);
      expect(fs.readFileSync(path.join(dir, "holm.db")).equals(before), name).toBe(true);
      expect(leftovers(dir), name).toEqual([]);
    }
  }, 60_000);

  it("refuses entries outside the state directory, links and a manifest without its fields, cleanly", async () => {
    const entries = await goodEntries();
    const dir = await goodDir("kept-entries");
    const before = fs.readFileSync(path.join(dir, "holm.db"));
    // Outside names of this run only (an earlier run's or anyone's /tmp/x would say nothing).
    const x = `holm-escape-${process.pid}`;
    const bad: [string, Entry[], RegExp][] = [
      ["dotdot", [{ name: "holm.db", data: entries.get("holm.db")! }, { name: `../../tmp/${x}`, data: "x" }], new RegExp(`holds \\.\\./\\.\\./tmp/${x}, which no holm backup has`)],
      ["absolute", [{ name: "secret.key", data: "k" }, { name: `/tmp/${x}-2`, data: "x" }], new RegExp(`holds /tmp/${x}-2, which no holm backup has`)],
      ["frame-dotdot", [{ name: "holm.db", data: entries.get("holm.db")! }, { name: `frames/../../../../tmp/${x}-3.png`, data: "x" }], /which no holm backup has/],
      ["symlink-key", [{ name: "holm.db", data: entries.get("holm.db")! }, { name: "secret.key", type: "symlink", linkname: "/etc/shadow" }], /secret\.key is a symbolic link/],
      ["hardlink-key", [{ name: "holm.db", data: entries.get("holm.db")! }, { name: "secret.key", type: "link", linkname: "holm.db" }], /secret\.key is a hard link/],
      ["manifest", [{ name: "holm.db", data: entries.get("holm.db")! }, { name: "holm-backup.json", data: '{"format":1}' }], /holm-backup\.json is not a holm backup's manifest/],
    ];
    for (const [name, list, says] of bad) {
      const ran = await holm(["restore", await archive(path.join(work, `${name}.tar.gz`), list), "--state-dir", dir, "--force"]);
      expect(ran.code, name).toBe(1);
      expect(ran.stderr, name).toMatch(says);
      expect(ran.stderr, name).not.toMatch(/\n\s+at |Emitted 'error'|Cannot read properties/);
      expect(leftovers(dir), name).toEqual([]);
      expect(fs.readFileSync(path.join(dir, "holm.db")).equals(before), name).toBe(true);
    }
    for (const f of [`/tmp/${x}`, `/tmp/${x}-2`, `/tmp/${x}-3.png`]) expect(fs.existsSync(f), f).toBe(false);
  }, 90_000);

  it("refuses an entry larger than any holm backup holds", async () => {
    const entries = await goodEntries();
    const dir = path.join(work, "oversized");
    const size = 64 * 1024 * 1024;
    const frame = `frames/ab/${"ab".repeat(32)}.png`;
    const file = await archive(path.join(work, "big.tar.gz"), [
      { name: "holm.db", data: entries.get("holm.db")! },
      { name: frame, size, stream: () => Readable.from((function* () { for (let i = 0; i < 64; i++) yield Buffer.alloc(1024 * 1024); })()) },
      { name: "holm-backup.json", data: entries.get("holm-backup.json")! },
    ]);
    const ran = await holm(["restore", file, "--state-dir", dir]);
    expect(ran.code).toBe(1);
    expect(ran.stderr).toMatch(new RegExp(`holds ${frame}, which is 64\\.0 MiB: more than a frame`));
    // The directory it made for the restore goes again, with what it had unpacked.
    expect(fs.existsSync(dir)).toBe(false);
  }, 60_000);

  it("says in words what is wrong with the file or the place", async () => {
    const bytes = fs.readFileSync(good);
    const cut = path.join(work, "cut.tar.gz");
    fs.writeFileSync(cut, bytes.subarray(0, Math.floor(bytes.length / 2)));
    const notGzip = path.join(work, "plain.tar.gz");
    fs.writeFileSync(notGzip, "just some text, not an archive\n");
    const stateFile = path.join(work, "a-state-file");
    fs.writeFileSync(stateFile, "not a directory\n");
    const cases: [string[], RegExp][] = [
      [["restore", cut, "--state-dir", path.join(work, "r1")], /^.*is cut short: not a whole holm backup/m],
      [["restore", notGzip, "--state-dir", path.join(work, "r2")], /is not a gzip file: not a holm backup/],
      [["restore", path.join(work, "missing.tar.gz"), "--state-dir", path.join(work, "r3")], /no file .*missing\.tar\.gz/],
      [["backup", path.join(work, "nodir", "b.tar.gz"), "--state-dir", server.stateDir], /no directory .*nodir.* to write the archive in/],
      // A state directory that is a file (or a link to one).
      [["restore", good, "--state-dir", stateFile, "--force"], /a-state-file is not a directory/],
    ];
    for (const [args, says] of cases) {
      const ran = await holm(args);
      expect(ran.code, args.join(" ")).toBe(1);
      expect(ran.stderr, args.join(" ")).toMatch(says);
      expect(ran.stderr, args.join(" ")).not.toMatch(/bad_request|ENOENT|ENOTDIR|incorrect header check|unexpected end of file/);
    }
    for (const r of ["r1", "r2", "r3"]) expect(fs.existsSync(path.join(work, r)), r).toBe(false);
  }, 60_000);
});

describe.skipIf(ON_POSTGRES)("holm doctor on what the server could not use", () => {
  const env = () => ({ HOLM_STATE_DIR: server.stateDir, HOLM_SERVER_TOKEN: server.token, HOLM_SERVER_ADDR: new URL(server.base).host });

  it("says an engine that accepts and never answers does not answer, in seconds", async () => {
    const sock = path.join(work, "hang.sock");
    const held: net.Socket[] = [];
    const hang = net.createServer((c) => held.push(c));
    await new Promise<void>((r) => hang.listen(sock, r));
    try {
      const ran = await holm(["doctor"], { ...env(), HOLM_DOCKER_SOCKET: sock }, 45_000);
      expect(ran.code, ran.stdout + ran.stderr).toBe(1);
      expect(ran.stdout).toMatch(/fail\s+engine\s+the engine at .*hang\.sock does not answer/);
      expect(ran.ms).toBeLessThan(30_000);
    } finally {
      for (const c of held) c.destroy();
      hang.close();
    }
  }, 60_000);

  it("takes a *.localhost public URL as loopback, as the server does (open mode stays)", async () => {
    const { HOLM_SERVER_TOKEN: _token, ...noToken } = env();
    const ran = await holm(["doctor"], { ...noToken, HOLM_PUBLIC_URL: "http://holm.localhost:8080" }, 45_000);
    expect(ran.stdout, ran.stdout + ran.stderr).toMatch(/HOLM_SERVER_TOKEN is unset: \/v1 is open to loopback callers/);
  }, 60_000);

  it("fails a state directory that is a file, or that this user cannot read", async () => {
    const file = path.join(work, "a-file");
    fs.writeFileSync(file, "");
    const ran = await holm(["doctor"], { ...env(), HOLM_STATE_DIR: file });
    expect(ran.code).toBe(1);
    expect(ran.stdout).toMatch(/fail\s+store\s+.*a-file is not a directory[\s\S]*fix: /);

    // Root's 0700 directory, doctor run as nobody (setpriv): it cannot see into it.
    const locked = path.join(work, "locked");
    fs.mkdirSync(locked, { mode: 0o700 });
    fs.copyFileSync(path.join(server.stateDir, "holm.db"), path.join(locked, "holm.db"));
    fs.chmodSync(work, 0o755);
    const asNobody = await new Promise<Ran>((resolve) => {
      const child = spawn("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", process.execPath, path.join(ROOT, "build/cli/holm.js"), "doctor"], {
        cwd: "/",
        env: { PATH: process.env.PATH ?? "", HOME: "/", HOLM_CONFIG_FILE: "none", HOLM_STORAGE_BACKEND: "local", HOLM_ROOT: ROOT, ...env(), HOLM_STATE_DIR: locked },
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d) => (stdout += d));
      child.stderr.on("data", (d) => (stderr += d));
      child.on("close", (code) => resolve({ code, stdout, stderr, ms: 0 }));
    });
    expect(asNobody.code, asNobody.stdout + asNobody.stderr).toBe(1);
    expect(asNobody.stdout).toMatch(/fail\s+store\s+.*locked cannot be read and written by this user \(uid 65534\)[\s\S]*fix: /);
    expect(asNobody.stdout).not.toMatch(/does not exist yet/);
  }, 60_000);
});
